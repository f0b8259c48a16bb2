#!/usr/bin/env bash
# Installs everything teetrain needs to build, test and run, from Debian packages. Idempotent:
# packages already present are not reinstalled, and apt-get update runs only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  ccache                              # rebuilds reuse unchanged objects (scripts/build.sh)
  libopenmpi-dev openmpi-bin          # MPI: mpirun-launched ranks
  libssl-dev                          # OpenSSL 3: AES-GCM, ChaCha20-Poly1305, HKDF, X25519, Ed25519, X.509
  openssl                             # the CLI: tests check that `openssl verify` reads our certificates
  libxml2-dev libxmlsec1-dev libxmlsec1-openssl   # XML signatures of NVIDIA's RIMs (verify-evidence --rim)
  libopenblas-openmp-dev              # sgemm for the CPU backend, on the same OpenMP threads as its loops
  libdnnl-dev                         # oneDNN: the CPU backend's convolutions (as PyTorch's CPU path)
  libgtest-dev libbenchmark-dev       # tests and benchmarks
  libcli11-dev nlohmann-json3-dev     # command line and JSON
  zlib1g-dev                          # gzipped idx image files
  fortunes                            # bundled English text corpus (/usr/share/games/fortunes)
  dataset-fashion-mnist               # image dataset (/usr/share/datasets/fashion-mnist)
  python3 python3-matplotlib          # tools/reproduce.py (report and figures), JSON checks in CLI tests
  iproute2 procps                     # tests/multihost: emulated hosts (ip netns, tc), sysctl
)
# Optional extras for fixture generation and the PyTorch comparisons (not needed by CI).
if [[ "${TEETRAIN_WITH_PYTHON:-0}" == "1" ]]; then
  PACKAGES+=(python3-torch)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
