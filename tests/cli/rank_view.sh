#!/usr/bin/env bash
# Runs one rank of an mpirun job with its own view of the file system, so that ranks see DIFFERENT
# files at the SAME path: what an attacker who owns one host's disk can arrange. Usage, under mpirun:
#   mpirun -np 2 -x RANK_VIEW_1="SRC=DST,SRC2=DST2" bash rank_view.sh teetrain train ...
# RANK_VIEW_<rank> lists bind mounts (SRC over DST, files or directories) made in a private mount
# namespace of that rank only (unshare --mount: needs root, as the tests run); a rank without one
# runs unchanged.
set -euo pipefail
var="RANK_VIEW_${OMPI_COMM_WORLD_RANK:?rank_view.sh runs under mpirun}"
[[ -z "${!var:-}" ]] && exec "$@"
exec unshare --mount --propagation private -- bash -c '
  IFS=, read -ra binds <<<"$1"; shift
  for b in "${binds[@]}"; do mount --bind "${b%%=*}" "${b#*=}"; done
  exec "$@"' rank_view "${!var}" "$@"
