#!/usr/bin/env bash
# ZeRO-3 against DDP on this machine's CPUs: the step time of `train --shard params` (prefetch on and
# off) and of ZeRO-1/2 beside DDP's, side by side, and each stage's peak resident set.
#
#   tools/bench/shard_step.sh [MODEL] [ROUNDS] [STEPS]     # default: gpt2-mini 3 12, P = 2
#
# Each round runs every stage once, in a rotating order (so a burst of load hits them all alike); each
# run's first 2 steps warm up and are left out. Per stage: the median of its timed steps' step_s over
# all rounds, its ratio to DDP's, rank 0's median resident set after a timed step (--metrics rss_mib:
# what the stage keeps between steps) and the largest peak RSS of its ranks (/usr/bin/time's %M: every
# run starts from whole parameters, so the peak cannot show ZeRO-3's saving). CPU time per timed step
# too, far less sensitive to other load on the machine than wall time: the ranks' mean user + sys
# (/usr/bin/time's %U %S) less that of a 2-step run of the same stage in the same round (start-up and
# warm-up), over the timed steps; its median over rounds and its ratio to DDP's.
# Environment: TT (the binary, default build/teetrain), NP (ranks, 2), BATCH (4), SEQ (64), THREADS (1),
# BUCKET_MB (1: ZeRO-3 releases whole buckets, and a bucket that also holds embeddings stays, so the
# buckets must be smaller than a block for its saving to show).
set -euo pipefail
cd "$(dirname "$0")/../.."
model="${1:-gpt2-mini}" rounds="${2:-3}" steps="${3:-12}"
TT="${TT:-build/teetrain}" NP="${NP:-2}" BATCH="${BATCH:-4}" SEQ="${SEQ:-64}" THREADS="${THREADS:-1}"
BUCKET_MB="${BUCKET_MB:-1}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -f data-cache/fortunes_train.bin ]] || "$TT" prepare-text >/dev/null
echo "machine: $(nproc) hardware threads, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model $model, P = $NP, batch $BATCH, seq $SEQ, threads $THREADS, --bucket-mb $BUCKET_MB, $steps steps (2 warm-up) x $rounds rounds"
stages=(none optimizer gradients params params:off)
run() { # stage round steps tag
  local stage="${1%%:*}" prefetch="${1#*:}" tag="$4"
  [[ "$prefetch" == "$1" ]] && prefetch=on
  OMP_WAIT_POLICY=passive mpirun --allow-run-as-root --oversubscribe -np "$NP" \
    sh -c 'exec /usr/bin/time -f "%U %S %M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$work/$tag.rss" \
    "$TT" train --model "$model" --data data-cache/fortunes --steps "$3" --batch "$BATCH" --seq "$SEQ" \
    --threads "$THREADS" --bucket-mb "$BUCKET_MB" --val-batches 0 --no-progress --shard "$stage" --prefetch "$prefetch" \
    --metrics "$work/$tag.jsonl" --quiet >"$work/$tag.log" 2>&1
}
for ((r = 0; r < rounds; r++)); do
  for ((i = 0; i < ${#stages[@]}; i++)); do
    s="${stages[(i + r) % ${#stages[@]}]}"
    run "$s" "$r" "$steps" "${s/:/_}_$r"
    run "$s" "$r" 2 "${s/:/_}_${r}_short"
  done
done
python3 - "$work" "$rounds" "${stages[@]}" <<'EOF'
import glob, json, statistics, sys
work, rounds, stages = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def cpu_s(tag):  # the ranks' mean user + sys seconds
    files = glob.glob(f"{work}/{tag}.rss.*")
    return sum(float(u) + float(s) for u, s, _ in (open(f).read().split() for f in files)) / len(files)
med, cpu = {}, {}
print(f"{'stage':<14} {'median step_s':>14} {'vs DDP':>8} {'CPU ms/step':>12} {'vs DDP':>8} "
      f"{'RSS after step':>15} {'peak RSS':>9}  (MiB, rank 0 / any rank)")
for s in stages:
    tag = s.replace(':', '_')
    times, rss, cpus = [], [], []
    for r in range(rounds):
        rows = [json.loads(l) for l in open(f"{work}/{tag}_{r}.jsonl")]
        times += [row["step_s"] for row in rows[2:]]
        rss += [row["rss_mib"] for row in rows[2:]]
        cpus.append((cpu_s(f"{tag}_{r}") - cpu_s(f"{tag}_{r}_short")) / (len(rows) - 2))
    peak = max(int(open(f).read().split()[-1]) for f in glob.glob(f"{work}/{tag}_*.rss.*"))
    med[s], cpu[s] = statistics.median(times), statistics.median(cpus)
    name = {'none': 'none (DDP)', 'params:off': 'params, no pf'}.get(s, s)
    print(f"{name:<14} {med[s]:>14.4f} {med[s] / med['none']:>7.3f}x {cpu[s] * 1e3:>12.1f} "
          f"{cpu[s] / cpu['none']:>7.3f}x {statistics.median(rss):>15.1f} {peak / 1024:>9.1f}")
EOF
