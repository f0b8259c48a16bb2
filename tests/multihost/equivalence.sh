#!/usr/bin/env bash
# Two emulated hosts, two ranks each (scripts/netns-hosts.sh: network namespaces on a bridge,
# TCP between hosts, shared memory within one):
#  - a 4-rank run across the hosts ends with the same params_sha256 as the same 4-rank run on one
#    host, over each point-to-point layer clusters launch Open MPI with (rig.sh TRANSPORTS: TCP only,
#    `--mca btl tcp,self`; shared memory and TCP, `self,vader,tcp`; UCX, `--mca pml ucx`, skipped
#    with the reason where Open MPI has none): where the ranks live and how MPI moves their bytes
#    change the transport, never the arithmetic. TT_MULTIHOST_REPEAT=N repeats each 2-host run N
#    times (default 1), to look for failures that come and go;
#  - the summary says ranks_per_host 2 (ranks sharing rank 0's host, not the world size) and the
#    default --threads splits the host's cores between those ranks: max(1, host_cores / 2);
#  - with rank 0 alone on its host (hosts of 1 and 2 slots) it says 1, and takes the smallest share of a
#    host over the ranks, the other host's (every rank computes with one thread count);
#  - rank 0 reaches its host's other rank through the shared-memory channels, the others through MPI;
#  - a sealed run whose segments are longer than MPI's eager limit (each a rendezvous) finishes across
#    the hosts with one host's parameters: every wait moves both the shared-memory channels and MPI
#    (Note [Progress on both paths], comm/transport/shm_transport.h; without it the ring stopped).
source "$(dirname "$0")/rig.sh" "$@"
make_corpus
rig_up 2 --slots 2
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 20 --batch 8 --seq 16 --no-progress --seed 11
      --val-batches 2 --timeout 30)
# Every mpirun gets a hard bound: a hang fails the test instead of reaching CTest's timeout.
BOUND=(timeout -k 5 60)

REPEAT="${TT_MULTIHOST_REPEAT:-1}"
cores=$(getconf _NPROCESSORS_ONLN)  # what the summary calls host_cores
threads=$((cores / 2 > 1 ? cores / 2 : 1))  # the default on a host of 2 ranks

# One host, 4 ranks, the thread count the 2-host runs default to (bit-identity holds for equal counts).
"${BOUND[@]}" mpirun --allow-run-as-root --oversubscribe -np 4 "$TT" "${base[@]}" --threads "$threads" \
  --summary "$WORK/one.json" >"$WORK/one.log" 2>&1 || { fail "4 ranks on 1 host: exit $?"; cat "$WORK/one.log"; }
expect_eq "$(json_field "$WORK/one.json" ranks_per_host)" 4 "1 host x 4 ranks: ranks_per_host"
sha1=$(json_field "$WORK/one.json" params_sha256)
[[ -n "$sha1" ]] || fail "no params_sha256 in the 1-host summary"

# Across hosts, default thread count (no --threads), over each transport.
for t in "${TRANSPORT_NAMES[@]}"; do
  why=$(transport_missing "$t")
  if [[ -n "$why" ]]; then echo "SKIP: 2 hosts over $t: $why"; continue; fi
  read -ra mca <<<"${TRANSPORTS[$t]}"
  for ((i = 1; i <= REPEAT; i++)); do
    out="$WORK/two-$t"
    rm -f "$out.json"
    "${BOUND[@]}" "$RIG" mpirun "${mca[@]}" -np 4 "$TT" "${base[@]}" --summary "$out.json" >"$out.log" 2>&1 \
      || { fail "4 ranks on 2 hosts over $t (run $i): exit $?"; tail -20 "$out.log"; continue; }
    sha2=$(json_field "$out.json" params_sha256)
    echo "2 hosts over $t (run $i of $REPEAT): params_sha256 $sha2"
    expect_eq "$sha2" "$sha1" "params_sha256 over $t (run $i): 4 ranks on 2 hosts == 4 ranks on 1 host"
  done
  expect_eq "$(json_field "$out.json" world_size)" 4 "2 hosts over $t: world_size"
  expect_eq "$(json_field "$out.json" ranks_per_host)" 2 "2 hosts x 2 ranks over $t: ranks_per_host"
  expect_eq "$(json_field "$out.json" threads)" "$threads" "2 hosts x 2 ranks over $t: default threads on $cores cores"
  grep -q "params_sha256 $sha1" "$out.log" && ok "$t: done line names $sha1" || fail "$t: done line lacks params_sha256"
  # Rank 0 reaches its host's other rank through the shared-memory channels and the other host through MPI.
  grep -q "host transport shm: 1 peer(s) on this host .*; 2 rank(s) on other hosts through MPI" "$out.log" \
    && ok "2 hosts over $t: one peer through shared memory, two through MPI" || fail "2 hosts over $t: host transport line"
done
expect_eq "$(json_field "$WORK/two-vader.json" host_cores)" "$cores" "host_cores"
# The ranks really were on two hosts (h1, h2), started through the rig's agent.
hosts_seen=$("${BOUND[@]}" "$RIG" mpirun -np 4 hostname 2>/dev/null | sort | uniq -c | tr -s ' ' | paste -sd, -)
expect_eq "$hosts_seen" " 2 h1, 2 h2" "ranks per emulated host"

# Sealed 1 MiB segments, above TCP's 64 KiB eager limit, on 2 hosts and on 1.
provision_trust
sealed=(--model gpt2-mini --steps 3 --tee fast --allow-plain-data "${TRUST[@]}" --segment-kb 1024)
"${BOUND[@]}" "$RIG" mpirun -np 4 "$TT" "${base[@]}" "${sealed[@]}" --summary "$WORK/sealed2.json" \
  >"$WORK/sealed2.log" 2>&1 || { fail "sealed rendezvous segments on 2 hosts: exit $?"; tail -5 "$WORK/sealed2.log"; }
"${BOUND[@]}" mpirun --allow-run-as-root --oversubscribe -np 4 "$TT" "${base[@]}" "${sealed[@]}" --threads "$threads" \
  --summary "$WORK/sealed1.json" >"$WORK/sealed1.log" 2>&1 || { fail "sealed on 1 host: exit $?"; cat "$WORK/sealed1.log"; }
expect_eq "$(json_field "$WORK/sealed2.json" params_sha256)" "$(json_field "$WORK/sealed1.json" params_sha256)" \
  "sealed 1 MiB segments: params_sha256 on 2 hosts == on 1 host"

# Rank 0 alone on host 1, ranks 1-2 on host 2.
"${BOUND[@]}" "$RIG" mpirun -np 3 --host 10.213.0.1:1,10.213.0.2:2 "$TT" "${base[@]}" --steps 2 \
  --summary "$WORK/lone.json" >"$WORK/lone.log" 2>&1 || { fail "1+2 ranks: exit $?"; cat "$WORK/lone.log"; }
expect_eq "$(json_field "$WORK/lone.json" ranks_per_host)" 1 "rank 0 alone on its host: ranks_per_host"
expect_eq "$(json_field "$WORK/lone.json" threads)" "$(( cores / 2 > 1 ? cores / 2 : 1 ))" \
  "rank 0 alone on its host: default threads, the other host's share"
finish
