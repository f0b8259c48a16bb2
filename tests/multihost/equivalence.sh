#!/usr/bin/env bash
# Two emulated hosts, two ranks each (scripts/netns-hosts.sh: network namespaces on a bridge,
# TCP between hosts, shared memory within one):
#  - a 4-rank run across the hosts ends with the same params_sha256 as the same 4-rank run on one
#    host: where the ranks live changes the transport, never the arithmetic;
#  - the summary says ranks_per_host 2 (ranks sharing rank 0's host, not the world size) and the
#    default --threads splits the host's cores between those ranks: max(1, host_cores / 2);
#  - with rank 0 alone on its host (hosts of 1 and 2 slots) it says 1, and takes the smallest share of a
#    host over the ranks, the other host's (every rank computes with one thread count);
#  - rank 0 reaches its host's other rank through the shared-memory channels, the others through MPI.
source "$(dirname "$0")/rig.sh" "$@"
make_corpus
rig_up 2 --slots 2
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 20 --batch 8 --seq 16 --no-progress --seed 11
      --val-batches 2 --timeout 30)
# Every mpirun gets a hard bound: a hang fails the test instead of reaching CTest's timeout.
BOUND=(timeout -k 5 60)

# Across hosts, default thread count (no --threads).
"${BOUND[@]}" "$RIG" mpirun -np 4 "$TT" "${base[@]}" --summary "$WORK/two.json" >"$WORK/two.log" 2>&1 \
  || { fail "4 ranks on 2 hosts: exit $?"; cat "$WORK/two.log"; }
threads=$(json_field "$WORK/two.json" threads)
cores=$(json_field "$WORK/two.json" host_cores)
expect_eq "$(json_field "$WORK/two.json" world_size)" 4 "2 hosts: world_size"
expect_eq "$(json_field "$WORK/two.json" ranks_per_host)" 2 "2 hosts x 2 ranks: ranks_per_host"
expect_eq "$threads" "$(( cores / 2 > 1 ? cores / 2 : 1 ))" "2 hosts x 2 ranks: default threads on $cores cores"
# The ranks really were on two hosts (h1, h2), started through the rig's agent.
hosts_seen=$("${BOUND[@]}" "$RIG" mpirun -np 4 hostname 2>/dev/null | sort | uniq -c | tr -s ' ' | paste -sd, -)
expect_eq "$hosts_seen" " 2 h1, 2 h2" "ranks per emulated host"

# One host, 4 ranks, the same thread count (bit-identity holds for equal thread counts).
"${BOUND[@]}" mpirun --allow-run-as-root --oversubscribe -np 4 "$TT" "${base[@]}" --threads "${threads:-1}" \
  --summary "$WORK/one.json" >"$WORK/one.log" 2>&1 || { fail "4 ranks on 1 host: exit $?"; cat "$WORK/one.log"; }
expect_eq "$(json_field "$WORK/one.json" ranks_per_host)" 4 "1 host x 4 ranks: ranks_per_host"
sha2=$(json_field "$WORK/two.json" params_sha256)
sha1=$(json_field "$WORK/one.json" params_sha256)
[[ -n "$sha2" ]] || fail "no params_sha256 in the 2-host summary"
echo "2 hosts: threads $threads of $cores cores, params_sha256 $sha2; 1 host: $sha1"
expect_eq "$sha2" "$sha1" "params_sha256: 4 ranks on 2 hosts == 4 ranks on 1 host"
grep -q "params_sha256 $sha2" "$WORK/two.log" && ok "done line names $sha2" || fail "done line lacks params_sha256"
# Rank 0 reaches its host's other rank through the shared-memory channels and the other host through MPI.
grep -q "host transport shm: 1 peer(s) on this host .*; 2 rank(s) on other hosts through MPI" "$WORK/two.log" \
  && ok "2 hosts: one peer through shared memory, two through MPI" || fail "2 hosts: host transport line"

# Rank 0 alone on host 1, ranks 1-2 on host 2.
"${BOUND[@]}" "$RIG" mpirun -np 3 --host 10.213.0.1:1,10.213.0.2:2 "$TT" "${base[@]}" --steps 2 \
  --summary "$WORK/lone.json" >"$WORK/lone.log" 2>&1 || { fail "1+2 ranks: exit $?"; cat "$WORK/lone.log"; }
expect_eq "$(json_field "$WORK/lone.json" ranks_per_host)" 1 "rank 0 alone on its host: ranks_per_host"
expect_eq "$(json_field "$WORK/lone.json" threads)" "$(( cores / 2 > 1 ? cores / 2 : 1 ))" \
  "rank 0 alone on its host: default threads, the other host's share"
finish
