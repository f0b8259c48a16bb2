#!/usr/bin/env bash
# --adversary: an attacker on the links between ranks. snoop shows gradients in clear with the TEE off
# and only ciphertext with it on; every active attack on a sealed run stops it with exit 3 and one line
# naming rank, peer, step, bucket, phase and chunk; with the TEE off a flip goes unnoticed and the
# adversary's report says so; mitm is refused at attestation. One tampered message gives one verdict
# line, the other failing ranks say they stopped because of it. rewrite (a replay whose clear header
# claims to be the expected message) is refused when sealed and accepted when plain; mitm-relay reads
# everything under --attestation none, with the run's result unchanged, and is refused with a root;
# an oversized message where evidence belongs is refused unread, exit 3, over MPI and shared memory;
# hier's forwarded all-gather messages, flipped, replayed or substituted across sub-groups (also fitted to
# the expected length, so that only the tag refuses them), exit 3; the banner names the attacked rank's
# receivers.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
base=(train --model gpt2-tiny --steps 4 --batch 2 --seq 16 --threads 1 --no-progress --timeout 5)
plain=("${base[@]}" --data "$WORK/data/tiny")
sealed=("${base[@]}" --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast "${TRUST[@]}")
run() { # np log args...: runs mpirun, returns its exit code in $rc
  local np="$1" log="$2"
  shift 2
  rc=0
  mpirun --oversubscribe -np "$np" "$TT" "$@" >"$log" 2>&1 || rc=$?
}
check() { # what expected_rc pattern log
  if [[ $rc -ne $2 ]]; then
    echo "FAIL: $1: exit $rc, expected $2"; tail -5 "$4"; fails=$((fails + 1)); return
  fi
  if grep -qE -- "$3" "$4"; then passes=$((passes + 1)); else
    echo "FAIL: $1: no line matches /$3/"; tail -8 "$4"; fails=$((fails + 1)); fi
}

# snoop, TEE off: every link's gradients readable.
run 2 "$WORK/snoop_off.log" "${plain[@]}" --adversary "snoop:$WORK/cap"
check "snoop off" 0 "verdict: gradients READABLE" "$WORK/snoop_off.log"
for link in "0 -> 1" "1 -> 0"; do
  pct=$(awk -v l="$link" '$0 ~ "^"l" +gradients" {print $(NF-4)}' "$WORK/snoop_off.log" | tr -d '%')
  if awk -v p="${pct:-0}" 'BEGIN{exit !(p >= 99)}'; then passes=$((passes + 1)); else
    echo "FAIL: snoop off: link $link gradients plausible '$pct' < 99%"; fails=$((fails + 1)); fi
done
[[ -s "$WORK/cap/link_0_to_1.tsv" && -s "$WORK/cap/link_0_to_1_gradients_first.bin" ]] && passes=$((passes + 1)) ||
  { echo "FAIL: snoop:DIR wrote no capture"; fails=$((fails + 1)); }

# snoop, TEE fast: nothing readable, entropy >= 7.99 over the run, the clear header named.
run 2 "$WORK/snoop_fast.log" "${sealed[@]}" --steps 12 --adversary snoop
check "snoop fast" 0 "verdict: gradients unreadable" "$WORK/snoop_fast.log"
check "snoop fast header" 0 "in clear: the last 12 bytes of every sealed message" "$WORK/snoop_fast.log"
ent=$(sed -n 's/.*byte entropy \([0-9.]*\) bits\/byte over.*/\1/p' "$WORK/snoop_fast.log")
if awk -v e="${ent:-0}" 'BEGIN{exit !(e >= 7.99)}'; then passes=$((passes + 1)); else
  echo "FAIL: snoop fast: entropy '$ent' < 7.99"; fails=$((fails + 1)); fi
max_pct=$(awk '$4 == "gradients" {gsub("%","",$(NF-4)); print $(NF-4)}' "$WORK/snoop_fast.log" | sort -n | tail -1)
if awk -v p="${max_pct:-100}" 'BEGIN{exit !(p < 25)}'; then passes=$((passes + 1)); else
  echo "FAIL: snoop fast: gradients plausible '$max_pct'% (ciphertext should look random, ~17%)"; fails=$((fails + 1)); fi

# Every active attack on a sealed run: exit 3, one line with the full context, within the timeout.
context="INTEGRITY FAILURE: .*rank [0-9]+.* (at )?step [0-9]+, bucket [0-9]+, phase [a-z_]+, hop [0-9]+, chunk [0-9]+"
for np in 2 4; do
  for attack in flip:3 drop:3 replay:3 reorder:3 truncate:3 "flip:2@$((np - 1))"; do
    start=$(date +%s)
    run "$np" "$WORK/a.log" "${sealed[@]}" --adversary "$attack"
    check "fast P=$np $attack" 3 "$context" "$WORK/a.log"
    check "fast P=$np $attack announced" 3 "^adversary: " "$WORK/a.log"
    elapsed=$(($(date +%s) - start))
    [[ $elapsed -le 25 ]] && passes=$((passes + 1)) || { echo "FAIL: $attack took ${elapsed}s"; fails=$((fails + 1)); }
  done
done

# TEE off: a flip is not detected, and the adversary's report says so (the lesson of lab 2).
run 2 "$WORK/flip_off.log" "${plain[@]}" --adversary flip:3
check "off flip" 0 "NOTHING DETECTED THE ATTACK" "$WORK/flip_off.log"
check "off flip value" 0 "value #[0-9]+ .* -> .*e\+" "$WORK/flip_off.log"
# A delay longer than --timeout: the receiver gives up, naming the rank it waited for.
run 2 "$WORK/delay.log" "${plain[@]}" --timeout 2 --adversary delay:2:5000
check "delay past timeout" 1 "receive from rank 0 .*did not complete within 2 s" "$WORK/delay.log"
# A delay within it changes nothing but time.
run 2 "$WORK/delay_ok.log" "${sealed[@]}" --adversary delay:2:300
check "short delay" 0 "a delay changes no bytes" "$WORK/delay_ok.log"
# An attack numbered past the run's traffic says it did not fire.
run 2 "$WORK/late.log" "${plain[@]}" --adversary flip:100000
check "did not fire" 0 "the attack did not fire: .* carried [0-9]+ gradient message" "$WORK/late.log"
check "the flat ring's banner names its one link" 0 "^adversary ON .*: flip: inverts one bit of gradient message \
100000 on the link rank 0 -> rank 1$" "$WORK/late.log"

# A man in the middle is refused at attestation, before any key exists.
run 2 "$WORK/mitm.log" "${sealed[@]}" --adversary mitm
check "mitm" 3 "certificate not issued by the trusted vendor root" "$WORK/mitm.log"
run 2 "$WORK/mitm_cert.log" "${sealed[@]}" --adversary mitm:cert@1
check "mitm:cert" 3 "rank 1: evidence signed by a key that is not the certified device key" "$WORK/mitm_cert.log"

# An oversized message where attestation evidence belongs (64 MiB; the receive is posted for at most
# 16624 bytes), over MPI's own path and over shared memory: refused unread (Note [Sizes before
# receives]), attestation refused on every rank naming both sizes: exit 3 with one verdict line and no
# crash (Open MPI, handed it as a truncation, segfaulted).
for ht in mpi shm; do
  run 2 "$WORK/oversize.log" "${sealed[@]}" --host-transport $ht --adversary oversize
  check "oversize over $ht" 3 "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: .*rank 1: a message of \
67108864 bytes from rank 0 \(tag 111\) is longer than the receive buffer of 16624 bytes; refused unread" "$WORK/oversize.log"
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/oversize.log")" 1 "oversize over $ht: verdict lines"
  expect_eq "$(grep -ciE "segmentation|signal|corrupt|Bad address" "$WORK/oversize.log")" 0 "oversize over $ht: no crash"
done
run 2 "$WORK/oversize_small.log" "${sealed[@]}" --host-transport mpi --adversary oversize:100000@1
check "oversize:100000@1" 3 "rank 0: a message of 100000 bytes from rank 1 \(tag 111\)" "$WORK/oversize_small.log"
expect_exit 2 "oversize attacks the attestation handshake, which only TEE mode runs" -- \
  "$TT" "${plain[@]}" --adversary oversize

# One tampered message, one verdict: with four ranks a flipped all-gather message fails to open on
# the rank behind the adversary's link and again on every rank it was forwarded to; only the first is
# the attack (Note [One detection line]); the others say they stopped because of it, each in a line
# of its own, also the ranks that had not failed yet (Note [Every rank prints a line]).
for i in 1 2 3; do
  run 4 "$WORK/one.log" "${sealed[@]}" --adversary flip:4@3
  expect_eq "$rc" 3 "P=4 flip:4@3 run $i: exit"
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/one.log")" 1 "P=4 flip:4@3 run $i: verdict lines"
  check "P=4 flip:4@3 run $i: the verdict names the attacked link" 3 \
    "^teetrain: INTEGRITY FAILURE: rank 0: sealed message from rank 3 failed to open" "$WORK/one.log"
  others=$(grep "^teetrain: " "$WORK/one.log" | grep -v "INTEGRITY FAILURE" |
    grep -vc "^teetrain: rank [123]: stopped: rank 0 detected an attack" || true)
  expect_eq "$others" 0 "P=4 flip:4@3 run $i: other ranks' lines are consequences"
  expect_eq "$(grep -oE "^teetrain: (INTEGRITY FAILURE: )?rank [0-9]+:" "$WORK/one.log" | grep -oE "rank [0-9]+" |
    sort | uniq | tr '\n' ' ')" "rank 0 rank 1 rank 2 rank 3 " "P=4 flip:4@3 run $i: every rank prints its line"
done

# rewrite: the previous message again, its clear header rewritten to the expected counter. Sealed, the
# receiver opens with the counter it expects anyway: a tag mismatch (the header only changed the
# diagnosis from "replayed"); plain links have no header, and the replay goes through.
run 2 "$WORK/rewrite.log" "${sealed[@]}" --adversary rewrite:3
# The verdict is rank 1's detection, or (when rank 1's abort damaged its own message to rank 0 first)
# rank 0's tag mismatch on that message: either way a tag mismatch, never a replay diagnosis.
check "rewrite fast" 3 "INTEGRITY FAILURE: rank [01]: sealed message from rank [01] failed to open \(tag mismatch" \
  "$WORK/rewrite.log"
check "rewrite announced" 3 "clear header rewritten to the replaced message's \(nonce counter [0-9]+\)" "$WORK/rewrite.log"
run 2 "$WORK/rewrite_off.log" "${plain[@]}" --adversary rewrite:3
check "rewrite off" 0 "NOTHING DETECTED THE ATTACK" "$WORK/rewrite_off.log"

# mitm-relay: without a root of trust it runs its own handshake with each side, reads the released
# keys and the gradients, and re-seals everything: the run's parameters are those of a run without it.
none=("${base[@]}" --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --attestation none)
sha() { json_field "$1" params_sha256; }
# The runs without the relay, in one process (`teetrain runs`: the same code as `train`).
for mode in fast cc; do echo "${none[*]:1} --tee $mode --summary $WORK/clean_$mode.json"; done >"$WORK/clean.txt"
run 2 "$WORK/clean.log" runs "$WORK/clean.txt"
check "runs without the relay" 0 "clean.txt line 2 done" "$WORK/clean.log"
for mode in fast cc; do
  run 2 "$WORK/relay.log" "${none[@]}" --tee $mode --adversary mitm-relay --summary "$WORK/relay.json"
  check "relay $mode" 0 "NOTHING DETECTED THE RELAY" "$WORK/relay.log"
  check "relay $mode reads gradients" 0 "relay: read a gradient message on link (0 -> 1|1 -> 0) in clear" "$WORK/relay.log"
  check "relay $mode reads the dataset key" 0 "relay: opened the dataset key rank 0 released to rank 1" "$WORK/relay.log"
  expect_eq "$(sha "$WORK/relay.json")" "$(sha "$WORK/clean_$mode.json")" "relay $mode: same parameters as without it"
done
run 4 "$WORK/relay4.log" "${none[@]}" --tee fast --adversary mitm-relay@1
check "relay P=4 @1" 0 "relay: read a gradient message on link 1 -> 2 in clear" "$WORK/relay4.log"
run 2 "$WORK/relay_cert.log" "${sealed[@]}" --adversary mitm-relay
check "relay, certified" 3 "certificate not issued by the trusted vendor root" "$WORK/relay_cert.log"

# hier under fast (Note [Sub-group streams]): each all-gather block is sealed once by its owner on its
# sub-group's own stream and forwarded unchanged. P = 4 in 2 nodes of 2, one bucket: rank 0's gradient
# messages are 1 the node's scatter-reduce (to 1), 2 and 3 the scatter-reduce and all-gather among
# local index 0 (to 2), 4 the node's all-gather (to 1). A flipped local-index message, and local index
# 0's message replayed into the node's all-gather, stop every rank with exit 3 and one verdict naming
# the phase and the sub-group. In one node of 4 the node's all-gather forwards: rank 0's 5th message is
# rank 3's block passed on, its 4th rank 0's own; flipped, or substituted by the 4th, the forwarded
# message fails to open at rank 1.
hier=("${sealed[@]}" --steps 1 --gpus-per-node 2 --allreduce-algo hier)
verdict() { # what pattern log: exit 3, one verdict matching pattern, every other rank stopped by it
  check "$1" 3 "^teetrain: INTEGRITY FAILURE: $2" "$3"
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$3")" 1 "$1: verdict lines"
  expect_eq "$(grep -cE "^teetrain: rank [0-9]+: stopped: rank [0-9]+ detected an attack" "$3")" 3 "$1: ranks stopped"
}
run 4 "$WORK/hier_peers.log" "${hier[@]}" --adversary flip:3@0
verdict "hier flip local-index all-gather" "rank 2: sealed message from rank 0 failed to open \\(tag mismatch: \
tampered or wrong key\\) at step [0-9]+, bucket [0-9]+, phase hier_inter_all_gather, hop 0, .*origin 0, sender 0, \
receiver any, [0-9]+ bytes, local-index group of ranks 0,2$" "$WORK/hier_peers.log"
# The banner names the attacked rank's sends and their receivers (node and local index), not a ring link.
check "hier banner names the receivers" 3 "^adversary ON .*: flip: inverts one bit of gradient message 3 that \
rank 0 sends \(the hierarchical all-reduce sends rank 0's to ranks 1 and 2; the line that fires names the receiver\)$" \
  "$WORK/hier_peers.log"
check "hier fired line names the link" 3 "^adversary: flipped .* of gradient message 3 on link 0 -> 2 " "$WORK/hier_peers.log"
run 4 "$WORK/hier_cross.log" "${hier[@]}" --adversary replay:4@0
verdict "hier replay across sub-groups" "hierarchical all-reduce: rank 1 got a short message from rank 0 .*phase \
hier_local_all_gather, .*node group of ranks 0,1$" "$WORK/hier_cross.log"
# The same replay fitted to the expected length, its clear header the expected message's (rewrite:N:fit):
# the length check passes and the tag, under the node stream's key and associated data, refuses it.
run 4 "$WORK/hier_fit.log" "${hier[@]}" --adversary rewrite:4:fit@0
verdict "hier equal-length replay across sub-groups" "rank 1: sealed message from rank 0 failed to open \(tag \
mismatch: tampered or wrong key\) at step [0-9]+, bucket [0-9]+, phase hier_local_all_gather, hop 0, .*origin 0, \
sender 0, receiver any, [0-9]+ bytes, node group of ranks 0,1$" "$WORK/hier_fit.log"
check "hier equal-length replay announced" 3 "^adversary: replayed the previous message \(([0-9]+) bytes\) in place \
of gradient message 4 on link 0 -> 1 \([0-9]+ bytes\), (zero-padded|cut) from [0-9]+ to [0-9]+ bytes, its clear \
header rewritten" "$WORK/hier_fit.log"
expect_eq "$(grep -c "short message" "$WORK/hier_fit.log")" 0 "hier equal-length replay: no length failure"
# With the TEE off nothing refuses a flip, and the report names the rank that used it: recursive doubling's
# second message from rank 1 goes to rank 3, not to its ring successor.
run 4 "$WORK/rd_off.log" "${plain[@]}" --steps 1 --allreduce-algo rd --adversary flip:2@1
check "rd off flip: the report names the receiver" 0 "NOTHING DETECTED THE ATTACK: .* so rank 3 used what arrived \
as if rank 1 had sent it" "$WORK/rd_off.log"
check "rd off flip: the banner names both receivers" 0 "gradient message 2 that rank 1 sends \(the recursive \
doubling all-reduce sends rank 1's to ranks 0 and 3;" "$WORK/rd_off.log"
one_node=("${sealed[@]}" --steps 1 --gpus-per-node 4 --allreduce-algo hier)
for attack in flip:5@0 replay:5@0; do
  run 4 "$WORK/hier_fwd.log" "${one_node[@]}" --adversary "$attack"
  verdict "hier forwarded $attack" "rank 1: sealed message from rank 0 failed to open \\((tag mismatch|replayed).* \
phase hier_local_all_gather, hop 0, .*origin 3, sender 3, receiver any, .*node group of ranks 0,1,2,3$" "$WORK/hier_fwd.log"
done

# The ring benchmark takes the same adversary.
run 2 "$WORK/bench.log" bench allreduce --min-bytes 65536 --max-bytes 65536 --iters 2 --warmup 1 --tee fast \
  "${TRUST[@]}" --adversary flip:2
check "bench fast flip" 3 "$context" "$WORK/bench.log"
run 2 "$WORK/bench_snoop.log" bench allreduce --min-bytes 65536 --max-bytes 262144 --iters 2 --adversary snoop
check "bench snoop" 0 "verdict: gradients READABLE" "$WORK/bench_snoop.log"

# Bad specs and combinations: exit 2 with one line.
expect_exit 2 "unknown attack 'bogus'" -- "$TT" "${plain[@]}" --adversary bogus
expect_exit 2 "message number '' is not a number" -- "$TT" "${plain[@]}" --adversary flip:
expect_exit 2 "replay.*message number must be at least 2" -- "$TT" "${plain[@]}" --adversary replay:1
expect_exit 2 "delay needs" -- "$TT" "${plain[@]}" --adversary delay:3
expect_exit 2 "rewrite takes only ':fit'" -- "$TT" "${plain[@]}" --adversary rewrite:3:pad
expect_exit 2 "needs at least 2 ranks" -- "$TT" "${plain[@]}" --adversary flip:1
run 2 "$WORK/at7.log" "${plain[@]}" --adversary flip:1@7
check "@7" 2 "^teetrain: error: --adversary: @7 is not a rank of this 2-rank run" "$WORK/at7.log"
expect_exit 2 "only TEE mode runs" -- "$TT" "${plain[@]}" --adversary mitm
expect_exit 2 "mitm-relay attacks the attestation handshake, which only TEE mode runs" -- "$TT" "${plain[@]}" --adversary mitm-relay
run 4 "$WORK/relay_closing.log" "${none[@]}" --tee fast --adversary mitm-relay@3
check "relay on the closing link" 2 "needs a link the key release crosses" "$WORK/relay_closing.log"
expect_exit 2 "bypass" -- "$TT" "${plain[@]}" --allreduce mpi --adversary snoop
# The help points teachers to the labs and lists the option.
grep -q "docs/labs/" <<<"$("$TT" --help)" && passes=$((passes + 1)) || { echo "FAIL: --help does not name docs/labs/"; fails=$((fails + 1)); }
for cmd in train "bench allreduce"; do
  # shellcheck disable=SC2086
  grep -q -- "--adversary SPEC" <<<"$("$TT" $cmd --help)" && passes=$((passes + 1)) ||
    { echo "FAIL: $cmd --help has no --adversary"; fails=$((fails + 1)); }
done
# A reorder across buckets delivers a longer message than the one posted for: on a sealed path that is
# a message out of its place (exit 3, an integrity failure), not a transport error (exit 1).
# What the receiver meets first depends on timing (on an idle machine at P = 2, the next bucket's longer
# message; under load a shorter or misplaced one): always exit 3. The longer-message path itself:
# test_sealed_channel (SealedFaults) and test_shm_transport.
run 2 "$WORK/reorder_across_2.log" "${sealed[@]}" --bucket-mb 0.02 --adversary reorder:2
check "P=2 reorder across buckets" 3 "INTEGRITY FAILURE" "$WORK/reorder_across_2.log"
run 4 "$WORK/reorder_across_4.log" "${sealed[@]}" --bucket-mb 0.02 --adversary reorder:2
check "P=4 reorder across buckets" 3 "INTEGRITY FAILURE" "$WORK/reorder_across_4.log"
finish
