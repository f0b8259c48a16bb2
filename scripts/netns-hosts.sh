#!/usr/bin/env bash
# Emulates N hosts on one Linux machine for multi-host tests of teetrain (docs/multihost.md).
#
# Each host is a network namespace with its own loopback and one interface, eth0 (10.213.0.I/24
# for host I), cabled to a bridge in a further "switch" namespace; processes started in a host
# also get their own UTS namespace with the hostname hI, so Open MPI sees N distinct nodes (its
# shared-memory transport names its segments after the host name: two "hosts" sharing one name
# would collide in /dev/shm). mpirun runs in host 1 and starts the daemons of the other hosts
# through this script's `agent` command, an rsh agent that enters the host's namespaces instead
# of logging in; every byte between hosts therefore crosses the emulated links as TCP, which
# `shape` can slow down (tc tbf) and `cut` can unplug. Nothing is created in the root namespace,
# so a rig touches no real interface and two rigs with different tags do not see each other.
#
#   scripts/netns-hosts.sh up [N] [--slots S]   N hosts (default 2), hostfile with S slots each (default 2)
#   scripts/netns-hosts.sh mpirun ARGS...       mpirun in host 1 over the rig's hostfile, TCP pinned to the rig
#   scripts/netns-hosts.sh exec I CMD...        runs CMD in host I
#   scripts/netns-hosts.sh shape I RATE|off     limits host I's link to RATE (tc units: 200mbit, 1gbit) both ways
#   scripts/netns-hosts.sh cut I | mend I       unplugs / replugs host I's cable (switch port down / up)
#   scripts/netns-hosts.sh status               namespaces, addresses, link state and qdiscs
#   scripts/netns-hosts.sh down                 kills what runs in the rig's namespaces, deletes them
#   scripts/netns-hosts.sh check                exit 0 if this machine can build a rig, else 77 and why
#
# The rig is named by TT_NETNS_TAG (default "tt"): namespaces <tag>-h1 .. <tag>-hN and <tag>-sw,
# state (hostfile) in ${TMPDIR:-/tmp}/teetrain-netns-<tag>. Tests use a tag of their own.
# Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2. Exit 77 when the rig cannot be built
# here (CTest's skip code in tests/multihost), with a message saying why.
set -euo pipefail

TAG="${TT_NETNS_TAG:-tt}"
NET=10.213.0           # host I is $NET.I; a private test subnet that exists only inside the rig
STATE="${TMPDIR:-/tmp}/teetrain-netns-$TAG"
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

die() { echo "netns-hosts: $*" >&2; exit 1; }
skip() { echo "netns-hosts: SKIP: $*" >&2; exit 77; }
ns() { echo "$TAG-h$1"; }
sw() { echo "$TAG-sw"; }
hosts() { [[ -f "$STATE/hosts" ]] || die "no rig '$TAG' (run: $0 up)"; cat "$STATE/hosts"; }
check_host() {
  local n
  n=$(hosts) || exit 1
  [[ "$1" =~ ^[0-9]+$ ]] && ((1 <= $1 && $1 <= n)) || die "host '$1': not in 1..$n"
}

# Runs "$@" in host $1: its network namespace plus a private UTS namespace named h$1.
in_host() {
  local i="$1"; shift
  exec ip netns exec "$(ns "$i")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "h$i" "$@"
}

# Can this machine build a rig at all? Probe with a throwaway namespace, so a test can skip
# cleanly instead of failing half-way through `up`.
preflight() {
  command -v ip >/dev/null || skip "iproute2 ('ip') is not installed"
  command -v unshare >/dev/null || skip "util-linux ('unshare') is not installed"
  local probe="$TAG-probe$$"
  ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces (needs root / CAP_NET_ADMIN)"
  local ok=1
  ip -n "$probe" link add va type veth peer name vb 2>/dev/null || ok=0
  ((ok)) && { ip -n "$probe" link add vbr type bridge 2>/dev/null || ok=2; }
  ((ok == 1)) && { ip netns exec "$probe" unshare --uts true 2>/dev/null || ok=3; }
  ip netns del "$probe"
  case $ok in
    0) skip "the kernel has no veth support" ;;
    2) skip "the kernel has no bridge support" ;;
    3) skip "cannot create UTS namespaces (needs CAP_SYS_ADMIN)" ;;
  esac
}

undo_on_failure() {
  (($1 == 0)) || cmd_down
  exit "$1"
}

cmd_up() {
  local n=2 slots=2
  while (($#)); do
    case "$1" in
      --slots) slots="$2"; shift 2 ;;
      [0-9]*) n="$1"; shift ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  ((n >= 1 && n <= 250)) || die "up: N must be 1..250"
  [[ ! -e "$STATE" ]] || die "rig '$TAG' exists already ($STATE); run: $0 down (or set TT_NETNS_TAG)"
  preflight
  mkdir -p "$STATE"
  # A failure half-way leaves nothing behind.
  trap 'undo_on_failure $?' EXIT
  echo "$n" >"$STATE/hosts"
  ip netns add "$(sw)"
  ip -n "$(sw)" link add br0 type bridge forward_delay 0  # no STP learning wait: a fixed star
  ip -n "$(sw)" link set br0 up
  local i
  : >"$STATE/hostfile"
  for ((i = 1; i <= n; i++)); do
    ip netns add "$(ns "$i")"
    ip -n "$(ns "$i")" link set lo up
    # One cable per host: eth0 in the host, port pI on the switch.
    ip link add name eth0 netns "$(ns "$i")" type veth peer name "p$i" netns "$(sw)"
    ip -n "$(sw)" link set "p$i" master br0
    ip -n "$(sw)" link set "p$i" up
    ip -n "$(ns "$i")" addr add "$NET.$i/24" dev eth0
    ip -n "$(ns "$i")" link set eth0 up
    echo "$NET.$i slots=$slots" >>"$STATE/hostfile"
  done
  # Wait until host 1 reaches the last host (a refused connection to port 1 is an answer).
  for ((i = 0; i < 50 && n > 1; i++)); do
    [[ $(ip netns exec "$(ns 1)" timeout 1 bash -c "exec 3<>/dev/tcp/$NET.$n/1" 2>&1) == *refused* ]] && break
    sleep 0.1
  done
  echo "netns-hosts: $n hosts up (rig '$TAG'): $(seq -s ' ' -f "$NET.%g" 1 "$n"); hostfile $STATE/hostfile"
}

cmd_down() {
  local nsname pid
  for nsname in $(ip netns list | awk '{print $1}' | grep -E "^$TAG-(h[0-9]+|sw)$" || true); do
    # Processes left in the rig (a daemon that lost its link) are the rig's own: stop them by id.
    for pid in $(ip netns pids "$nsname" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$nsname"
  done
  rm -rf "$STATE"
}

# The rsh agent Open MPI calls as `AGENT [options] HOST COMMAND...` to start a daemon on HOST.
cmd_agent() {
  while [[ "${1:-}" == -* ]]; do shift; done
  local host="$1"; shift
  local i="${host##*.}"
  [[ "$host" == "$NET.$i" || "$host" =~ ^h[0-9]+$ ]] || die "agent: unknown host '$host'"
  i="${i#h}"
  check_host "$i"
  in_host "$i" /bin/sh -c "$*"
}

cmd_mpirun() {
  hosts >/dev/null || exit 1
  export TT_NETNS_TAG="$TAG"
  # Pin Open MPI's runtime (oob) and data (btl) TCP traffic to the rig's subnet; shared memory
  # between ranks of one host, TCP between hosts, as on a real cluster.
  # The emulated hosts share this machine's cores, and their TCP runs in the kernel's softirq work on
  # those same cores: a rank that busy-polls (MPI's default) holds the core the kernel needs to move
  # its peer's packets, and every message then waits for a scheduler tick (8 ms per message measured
  # on 2 cores, against 0.1 ms yielding). So the rig tells Open MPI to yield, as it does itself when
  # oversubscribed; teetrain's waits follow (engine/run/host_layout.h fair_wait_mode). On real hosts,
  # each with its own cores and NIC, leave it out.
  # The BTL list is the cluster's default (shared memory within a host, TCP between hosts) unless the
  # caller names its own (`--mca btl tcp,self`, as clusters often do): Open MPI refuses a parameter
  # given twice on one command line.
  # shellcheck disable=SC2054  # the commas are Open MPI's list syntax
  local btl=(--mca btl self,vader,tcp) a prev=
  for a in "$@"; do
    [[ "$prev" == -*mca && "$a" == btl ]] && btl=()
    prev="$a"
  done
  local cmd=(mpirun --hostfile "$STATE/hostfile" --mca plm_rsh_agent "$SELF agent" --mca mpi_yield_when_idle 1
             --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24" "${btl[@]}" "$@")
  # Say what runs: on real hosts it is the same command without the agent (ssh is the default).
  echo "netns-hosts: in h1: ${cmd[*]}" >&2
  in_host 1 "${cmd[@]}"
}

# tc tbf on both ends of host I's cable: the host's egress (eth0) and the switch port's (pI).
cmd_shape() {
  local i="$1" rate="$2"
  check_host "$i"
  local end nsname dev
  for end in "$(ns "$i"):eth0" "$(sw):p$i"; do
    nsname="${end%%:*}" dev="${end#*:}"
    if [[ "$rate" == off ]]; then
      tc -n "$nsname" qdisc del dev "$dev" root 2>/dev/null || true
    else
      # burst: at least one 64 KiB GSO segment (veth hands TCP super-packets to the qdisc);
      # latency bounds the queue so a slow link drops instead of buffering seconds.
      tc -n "$nsname" qdisc replace dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
}

cmd_link() {
  local i="$1" state="$2"
  check_host "$i"
  ip -n "$(sw)" link set "p$i" "$state"
}

cmd_status() {
  local n i
  n=$(hosts)
  for ((i = 1; i <= n; i++)); do
    echo "host $i ($(ns "$i")):"
    ip -n "$(ns "$i")" -brief addr show dev eth0
    tc -n "$(ns "$i")" qdisc show dev eth0
  done
  echo "switch ($(sw)):"
  ip -n "$(sw)" -brief link show
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  check) preflight ;;
  down) cmd_down ;;
  agent) shift; cmd_agent "$@" ;;
  mpirun) shift; cmd_mpirun "$@" ;;
  exec) shift; i="$1"; shift; check_host "$i"; in_host "$i" "$@" ;;
  shape) shift; (($# == 2)) || die "usage: shape I RATE|off"; cmd_shape "$@" ;;
  cut) shift; cmd_link "$1" down ;;
  mend) shift; cmd_link "$1" up ;;
  status) cmd_status ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
