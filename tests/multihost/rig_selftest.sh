#!/usr/bin/env bash
# The rig itself (scripts/netns-hosts.sh): three hosts on one bridge, each a distinct node to Open
# MPI (its own host name and address); a cut cable isolates one host and mending it reconnects;
# a second `up` under the same tag is refused; `down` leaves no namespace and no state behind,
# and so does a test that fails half-way (rig.sh's trap).
source "$(dirname "$0")/rig.sh" "$@"
rig_up 3 --slots 1
reach() { # FROM TO: does a TCP connection attempt from host FROM get an answer from host TO?
  [[ $("$RIG" exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/10.213.0.$2/1" 2>&1) == *refused* ]]
}
seen=$(timeout -k 5 60 "$RIG" mpirun -np 3 sh -c 'echo "$(hostname) $OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_LOCAL_SIZE"' \
  2>/dev/null | sort | paste -sd, -)
expect_eq "$seen" "h1 0 1,h2 1 1,h3 2 1" "3 hosts, one rank each (host rank local_size)"
for h in 1 2 3; do
  addr=$("$RIG" exec "$h" ip -4 -o addr show dev eth0 | awk '{print $4}')
  expect_eq "$addr" "10.213.0.$h/24" "host $h address"
done
reach 1 3 && ok "host 1 reaches host 3" || fail "host 1 does not reach host 3"
"$RIG" cut 3
reach 1 3 && fail "host 1 still reaches host 3 after the cut" || ok "cut: host 3 unreachable"
reach 1 2 && ok "cut: host 2 still reachable" || fail "cut of host 3 broke host 2"
"$RIG" mend 3
reach 1 3 && ok "mend: host 3 reachable again" || fail "host 3 unreachable after mend"
expect_exit 1 "exists already" -- "$RIG" up 2
"$RIG" down
left=$(ip netns list | grep -c "^$TT_NETNS_TAG-" || true)
expect_eq "$left" 0 "namespaces left after down"
[[ ! -e "$TMPDIR/teetrain-netns-$TT_NETNS_TAG" ]] && ok "no state left after down" || fail "state left after down"

# A test that fails with its rig up still tears it down.
inner="$WORK/failing.sh"
printf '%s\n' "source $(dirname "$0")/rig.sh \"\$1\"" 'rig_up 2' 'echo "tag $TT_NETNS_TAG"' 'false' >"$inner"
rc=0; out=$(bash "$inner" "$TT" 2>&1) || rc=$?
tag=$(sed -n 's/^tag //p' <<<"$out")
expect_ne "$rc" 0 "the failing test fails"
[[ -n "$tag" ]] && [[ $(ip netns list | grep -c "^$tag-" || true) -eq 0 ]] && ok "failed test left no namespace ($tag)" \
  || { fail "failed test left its rig: $tag"; echo "$out"; }
finish
