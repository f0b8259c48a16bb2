# shellcheck shell=bash
# Shared setup of the multi-host tests: source rig.sh "$@" (first argument: the teetrain binary).
# Builds a rig of emulated hosts (scripts/netns-hosts.sh) under a tag of this test's own, and
# tears it down on every exit, failures included. Exits 77 (CTest's skip) with the rig's reason
# when this machine cannot build one (no root, no network namespaces).
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh" "$@"
RIG="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/netns-hosts.sh"
# Unique per run (pid and time): two test runs on one machine, or a leftover of a killed run,
# never share namespaces. Namespace names stay short (<tag>-h1).
TT_NETNS_TAG="mh$$$(date +%N | cut -c1-3)"
export TT_NETNS_TAG
export TMPDIR="$WORK"
cleanup() {
  local rc=$?
  stop_burners
  "$RIG" down || true
  rm -rf "$WORK"
  return $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# rig_up N [--slots S]: the hosts, or skip the test when this machine cannot build them.
rig_up() {
  local rc=0
  "$RIG" up "$@" >"$WORK/rig.log" 2>&1 || rc=$?
  if [[ $rc -eq 77 ]]; then
    echo "SKIP: cannot emulate hosts here: $(grep SKIP "$WORK/rig.log")"
    exit 77
  fi
  [[ $rc -eq 0 ]] || { echo "FAIL: rig up $*"; cat "$WORK/rig.log"; exit 1; }
}

# rig_check: skip the test unless this machine can build a rig (for tests whose rig is built later).
rig_check() {
  local rc=0 why
  why=$("$RIG" check 2>&1) || rc=$?
  if [[ $rc -eq 77 ]]; then echo "SKIP: cannot emulate hosts here: $why"; exit 77; fi
  [[ $rc -eq 0 ]] || { echo "FAIL: rig check: $why"; exit 1; }
}

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }

# The point-to-point layers clusters launch Open MPI with, by name, as mpirun arguments (the rig
# passes a caller's `--mca btl` instead of its own self,vader,tcp):
#   tcp    TCP everywhere, between the ranks of one host too (clusters that rule shared memory out)
#   vader  shared memory within a host, TCP between hosts (Open MPI 4's default)
#   ucx    UCX's own transports (pml ucx; told to use any device, as the rig has no InfiniBand)
TRANSPORT_NAMES=(tcp vader ucx)
declare -A TRANSPORTS=(
  [tcp]="--mca btl tcp,self"
  [vader]="--mca btl self,vader,tcp"
  [ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
)
# transport_missing NAME: prints why this machine's Open MPI cannot run NAME (then a test skips it),
# or nothing.
transport_missing() {
  if [[ "$1" == ucx ]] && ! ompi_info --parsable 2>/dev/null | grep -q '^mca:pml:ucx:'; then
    echo "this Open MPI was built without UCX (ompi_info lists no pml ucx)"
  fi
}
