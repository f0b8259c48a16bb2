# A portable set-up for machines without Debian 12 or root (students on macOS, Fedora, a shared
# server): the README's two commands in a Debian 12 container, as root inside it.
#
#   docker build -t teetrain .                        # Debian 12 with every dependency (podman: the same)
#   docker run --rm -it teetrain scripts/demo.sh      # the main job
#   docker run --rm -it --privileged teetrain scripts/test.sh   # the suite (multihost tests make network namespaces)
#
# tests/cli/container.sh builds this image where docker or podman can, and checks it.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none
# The last setting: Open MPI's shared-memory transport copies between ranks with CMA, which a
# container without CAP_SYS_PTRACE refuses; plain copies through shared memory work everywhere.

WORKDIR /teetrain
# The dependencies in a layer of their own, before the sources: editing the code does not reinstall
# them. scripts/install-deps.sh is the one list of packages (the README's commands call it too, and
# then find everything present).
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
CMD ["scripts/demo.sh"]
