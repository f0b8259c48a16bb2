#!/usr/bin/env bash
# The main job: installs dependencies, builds the teetrain binary, prepares the bundled text (Debian's
# fortunes corpus), seals it, provisions emulated certified device identities, then shows what a TEE
# costs in data-parallel training, twice:
#   1. real CPU compute: gpt2-mini trained on 2 MPI ranks with TEE off, cc (H100 CC emulation) and fast
#      (our TEE-aware design); checks the three runs end with bit-identical parameters and samples text
#      from the fast run's sealed checkpoint. CPU compute is so slow that it hides the TEE's cost.
#   2. emulated H100s (--compute emulate --gpu h100, the reproduction grid's settings): gpt2-medium on 4
#      ranks in virtual time, where forward/backward cost what an H100 takes, the host seals at a
#      modelled 3.36 GB/s per core, and every message is a real sealed token. Here cc on H100 CC as
#      measured costs many times off, as Lee et al. measured on H100s; fast removes almost all of it
#      over a direct GPU-to-GPU link (a what-if), not through H100 CC's bounce buffers; a labelled
#      paper-fitted row shows what the paper's own figures imply. The demo fails (exit 1) unless cc >= 5x
#      off and fast (direct link) <= 1.2x off. These numbers are the same on any machine.
# Idempotent; safe to re-run. About a minute after the build on 2 cores.
#   STEPS=200 RANKS=4 scripts/demo.sh     # longer / wider real-compute part
#   EMU_MODEL=gpt2 scripts/demo.sh        # another model for the emulated part
#   DEMO_PART=real|emulated scripts/demo.sh   # one part only (default: both)
#   TEETRAIN=PATH DEMO_CACHE=DIR DEMO_OUT=DIR scripts/demo.sh   # a built binary (no install, no build),
#                                         # data, keys and identities in DIR, results in DIR (the tests)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${TEETRAIN:-}" ]]; then
  scripts/install-deps.sh
  scripts/build.sh release teetrain
fi
start=$SECONDS  # the demo itself, after the build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
TT="${TEETRAIN:-build/teetrain}"
steps="${STEPS:-40}"
ranks="${RANKS:-2}"
emu_model="${EMU_MODEL:-gpt2-medium}"
emu_ranks=4
part="${DEMO_PART:-both}"
case "$part" in both | real | emulated) ;; *) echo "demo: DEMO_PART=$part: choose real, emulated or both" >&2; exit 2;; esac
out="${DEMO_OUT:-runs/demo}"
cache="${DEMO_CACHE:-data-cache}"
mkdir -p "$out/emu" "$cache"

[[ -f $cache/fortunes_train.bin ]] || $TT prepare-text --out "$cache" --name fortunes
[[ -f $cache/teetrain.key ]] || $TT keygen --out "$cache/teetrain.key"
[[ -f $cache/sealed/fortunes_train.bin.sealed ]] || $TT seal-data --data "$cache/fortunes" --out "$cache/sealed" --key-file "$cache/teetrain.key"
# The emulated GPU vendor certifies one device identity per rank (idempotent: issues only missing
# ones); TEE ranks attest to each other with them before any key is agreed.
$TT provision --out "$cache/vendor" --devices "$((ranks > emu_ranks ? ranks : emu_ranks))" >/dev/null

cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
echo "== machine: $(nproc) cores, ${cpu:-unknown CPU}"

field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\}.*/\1/p" "$1" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

# ---- 1. Real CPU compute ---------------------------------------------------------------------------
common=(train --model gpt2-mini --steps "$steps" --batch 8 --seq 128 --lr 2e-3 --warmup 10 --seed 1
        --val-batches 4 --no-progress --key-file "$cache/teetrain.key"
        --trust-root "$cache/vendor/vendor_root.crt" --device-identity "$cache/vendor/device_{rank}.pem")
run() { # mode data extra...
  local mode="$1" data="$2"; shift 2
  echo "== $ranks ranks, --tee $mode: mpirun -np $ranks $TT ${common[*]} --tee $mode --data $data $*"
  mpirun --oversubscribe -np "$ranks" $TT "${common[@]}" --tee "$mode" --data "$data" \
    --summary "$out/$mode.json" --metrics "$out/$mode.jsonl" "$@"
}

real_table() {
  echo "== Real CPU compute (gpt2-mini, $ranks ranks, $steps steps, batch 8 x 128): the TEE costs little, because slow CPU compute hides it"
  printf '%-6s %12s %10s %12s  %s\n' mode "s/step" "vs off" "final loss" params_sha256
  local off m s
  off=$(field "$out/off.json" step_s_mean)
  for m in off cc fast; do
    s=$(field "$out/$m.json" step_s_mean)
    printf '%-6s %12.4f %9sx %12s  %s\n' "$m" "$s" "$(ratio "$s" "$off")" \
      "$(field "$out/$m.json" final_loss)" "$(field "$out/$m.json" params_sha256)"
  done
}
real_part() {
  run off "$cache/fortunes"
  run cc "$cache/sealed/fortunes"
  run fast "$cache/sealed/fortunes" --save-every "$steps" --ckpt-dir "$out/ckpt"
  local sha_off
  sha_off=$(field "$out/off.json" params_sha256)
  if ! [[ "$(field "$out/cc.json" params_sha256)" == "$sha_off" && "$(field "$out/fast.json" params_sha256)" == "$sha_off" ]]; then
    real_table
    echo "ERROR: parameters differ between TEE modes" >&2
    exit 1
  fi
  echo
  echo "== sample from the sealed checkpoint of the fast run"
  $TT sample --ckpt "$out/ckpt" --key-file "$cache/teetrain.key" --prompt "The " --tokens 160
  echo
}
if [[ $part != emulated ]]; then real_part; fi  # (not `a || f`: set -e would not apply inside f)

# ---- 2. Emulated H100 compute ----------------------------------------------------------------------
# The reproduction grid's emulated settings (tools/reproduce.py, docs/reproducing.md): batch 4 x 1024
# per rank (the batch the emulated GPU was measured at), 25 MiB buckets overlapped with backward,
# emulated NVLink. The runs are in virtual time (docs/design.md §11): every cost is computed for the
# modelled platform (the host seals at 3.36 GB/s per core), so the table is the same on any machine,
# busy or idle, and each run is made once. The first step warms up. Which hardware each row assumes:
# off is the H100 with CC off; cc and fast-h100 run on H100 CC as ISPASS 2025 measured it
# (--cc-hardware h100-pageable: copies through the bounce buffers at 2.5 GB/s + 35 us, kernel launches
# 5.05 us dearer); fast sends its GPU-sealed ciphertext over a direct GPU-to-GPU link
# (--cc-hardware direct-what-if), a what-if no shipping GPU offers; cc-paper charges the per-crossing cost that Lee et al.'s own 41.6x -> 3.03x
# implies, solved here from a gpt2-xl TEE-off run of today's emulator (PAPER-FITTED, not a hardware figure).
emu=(train --batch 4 --seq 1024 --bucket-mb 25 --overlap on --timing-warmup 1 --seed 1
     --val-batches 0 --no-progress --compute emulate --gpu h100 --link emulate
     --key-file "$cache/teetrain.key"
     --trust-root "$cache/vendor/vendor_root.crt" --device-identity "$cache/vendor/device_{rank}.pem")
hw=(--cc-hardware h100-pageable)
emu_run() { # name model mode timed-steps data extra...
  local name="$1" model="$2" mode="$3" n="$4" data="$5"; shift 5
  if ! mpirun --oversubscribe -np "$emu_ranks" $TT "${emu[@]}" --model "$model" --tee "$mode" --steps "$((n + 1))" \
         --data "$data" --summary "$out/emu/$name.json" "$@" >"$out/emu/$name.log" 2>&1; then
    echo "ERROR: emulated run $name failed; the end of $out/emu/$name.log:" >&2
    tail -15 "$out/emu/$name.log" >&2
    exit 1
  fi
  echo "   $name: $(field "$out/emu/$name.json" step_s_mean) s/step"
}
# The per-crossing cost that makes Lee et al.'s GPT-2-XL pair hold on this emulator (tools/scenarios.py,
# paper_toll_us): (41.6 - 3.03) x the gpt2-xl TEE-off step / (4(P-1) crossings per bucket x (buckets - 1)).
paper_toll_us() {
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); p = int(sys.argv[2])
print("%.1f" % ((41.6 - 3.03) * s["step_s_mean"] / (4 * (p - 1) * (s["buckets"] - 1)) * 1e6))' \
    "$out/emu/xl-off.json" "$emu_ranks"
}

emu_table() {
  echo "== Emulated H100 compute ($emu_model, $emu_ranks ranks, batch 4 x 1024, 25 MiB buckets): at GPU speed cc costs many times off; fast removes almost all of it only where GPUs have a direct encrypted link"
  printf '%-9s %10s %10s  %s\n' mode "s/step" "vs off" "what"
  local off s m what
  off=$(field "$out/emu/off.json" step_s_mean)
  for m in off cc fast-h100 fast cc-paper; do
    case $m in
      off) what="no TEE: the H100 with CC off";;
      cc) what="H100 CC as measured (ISPASS 2025): the host seals every chunk, bounce-buffer copies at 2.5 GB/s + 35 us, launches +5.05 us";;
      fast-h100) what="our design on H100 CC: sealed on the GPU, but the ciphertext still crosses the bounce buffers";;
      fast) what="our design over a direct GPU-to-GPU link: a WHAT-IF, no shipping GPU has one";;
      cc-paper) what="PAPER-FITTED: cc + ${paper_us} us per crossing, solved from Lee et al.'s own 41.6x -> 3.03x (not a measurement)";;
    esac
    s=$(field "$out/emu/$m.json" step_s_mean)
    printf '%-9s %10.4f %9sx  %s\n' "$m" "$s" "$(ratio "$s" "$off")" "$what"
  done
  echo "   (Lee et al., 4 H100s: cc 8.68x on average, 41.6x for GPT-2-XL. Virtual time: these are the modelled"
  echo "   platform's numbers, the same on any machine; the host seals at 3.36 GB/s per core, one core per rank.)"
}
# The point of the demo, checked: cc >= 5x off and fast (direct link) <= 1.2x off on emulated GPU-speed compute.
emulated_part() {
  echo "== emulated H100 compute: mpirun --oversubscribe -np $emu_ranks $TT ${emu[*]} --model $emu_model --tee MODE --steps N --data D"
  emu_run off "$emu_model" off 2 "$cache/fortunes"
  emu_run fast "$emu_model" fast 2 "$cache/sealed/fortunes" --cc-hardware direct-what-if
  emu_run fast-h100 "$emu_model" fast 2 "$cache/sealed/fortunes" "${hw[@]}"
  emu_run cc "$emu_model" cc 2 "$cache/sealed/fortunes" "${hw[@]}"
  emu_run xl-off gpt2-xl off 1 "$cache/fortunes"
  paper_us=$(paper_toll_us)
  emu_run cc-paper "$emu_model" cc 2 "$cache/sealed/fortunes" --cc-transfer-us "$paper_us"
  local off_s
  off_s=$(field "$out/emu/off.json" step_s_mean)
  cc_x=$(ratio "$(field "$out/emu/cc.json" step_s_mean)" "$off_s")
  fast_x=$(ratio "$(field "$out/emu/fast.json" step_s_mean)" "$off_s")
  if ! awk -v c="$cc_x" -v f="$fast_x" 'BEGIN{exit !(c >= 5 && f <= 1.2)}'; then
    emu_table
    echo "ERROR: on emulated H100 compute expected cc >= 5x off and fast <= 1.2x off, computed cc ${cc_x}x and" \
         "fast ${fast_x}x (logs: $out/emu/*.log)" >&2
    exit 1
  fi
}
if [[ $part != real ]]; then emulated_part; fi

echo
echo "== machine: $(nproc) cores, ${cpu:-unknown CPU}"
echo
if [[ $part != emulated ]]; then
  real_table
  echo "all three runs produced bit-identical parameters: sealing never changes the arithmetic"
  echo
fi
if [[ $part != real ]]; then
  emu_table
  echo "check passed: on emulated H100 compute cc costs ${cc_x}x off (>= 5x) and fast over a direct link ${fast_x}x off (<= 1.2x)"
  echo
fi
echo "Summaries: $out/{off,cc,fast}.json (real), $out/emu/*.json and *.log (emulated); per-step metrics:" \
     "$out/*.jsonl; sealed checkpoint: $out/ckpt"
echo "demo done in $((SECONDS - start)) s after the build"
