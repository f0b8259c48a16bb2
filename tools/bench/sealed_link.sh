#!/usr/bin/env bash
# Benchmark: the sealed ring against the plaintext ring over a network link, side by side in one run.
#
#   tools/bench/sealed_link.sh [--rate RATE] [--bytes SIZE] [--iters N] [--json FILE] TEETRAIN
#
# Two emulated hosts (scripts/netns-hosts.sh: network namespaces, TCP between them; needs root), one
# rank each, host 2's cable limited to RATE (default 2gbit: 250 MB/s, below what one core seals and
# opens with AES-256-GCM). `teetrain bench allreduce --tee fast` runs the sealed ring (pipelined
# segments, crypto threads) and the plaintext ring beside it at SIZE (default 16M); the line
# `sealed/plain busbw: X` is the ratio, against the target of 0.8 (docs/multihost.md): over a slow
# wire, the sealed ring hides its crypto behind the bytes in flight. On shared memory the wire is the
# CPU itself and no ring reaches it (tools/bench/README.md). A benchmark, not a test: a missed target
# is reported and exits 0; the run failing, or a wrong sum, exits 1; no rig here exits 77.
set -euo pipefail
RATE=2gbit BYTES=16M ITERS=8 JSON=""
while [[ $# -gt 1 ]]; do
  case "$1" in
    --rate) RATE="$2" ;;
    --bytes) BYTES="$2" ;;
    --iters) ITERS="$2" ;;
    --json) JSON="$2" ;;
    *) echo "sealed_link.sh: unknown option '$1' (options: --rate, --bytes, --iters, --json; then the teetrain binary)" >&2
       exit 2 ;;
  esac
  shift 2
done
[[ $# -eq 1 && -x "$1" ]] || { echo "usage: $0 [--rate RATE] [--bytes SIZE] [--iters N] [--json FILE] TEETRAIN (an executable)" >&2; exit 2; }
TT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
RIG="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/netns-hosts.sh"
TARGET=0.8

WORK=$(mktemp -d)
export TMPDIR="$WORK" TT_NETNS_TAG="sl$$"
trap '"$RIG" down >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
rc=0
"$RIG" up 2 --slots 1 >"$WORK/rig.log" 2>&1 || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "sealed_link.sh: cannot emulate two hosts here: $(tail -1 "$WORK/rig.log")" >&2
  exit $([[ $rc -eq 77 ]] && echo 77 || echo 1)
fi
"$TT" provision --out "$WORK/vendor" --devices 2 >/dev/null
"$RIG" shape 2 "$RATE"
OUT_JSON="${JSON:-$WORK/bench.json}"
[[ "$OUT_JSON" = /* ]] || OUT_JSON="$PWD/$OUT_JSON"
timeout -k 5 300 "$RIG" mpirun -np 2 "$TT" bench allreduce --min-bytes "$BYTES" --max-bytes "$BYTES" --tee fast --modes ring,plain \
  --trust-root "$WORK/vendor/vendor_root.crt" --device-identity "$WORK/vendor/device_{rank}.pem" \
  --warmup 1 --iters "$ITERS" --json "$OUT_JSON" || { echo "sealed_link.sh: bench allreduce failed (exit $?)" >&2; exit 1; }
echo "# link: host 2's cable shaped to $RATE (tc tbf, both directions), one rank per host"
python3 - "$OUT_JSON" "$TARGET" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
ring = [r for r in recs if r["mode"] == "ring"]
if not ring or not all(r["correct"] for r in recs):
    sys.exit("sealed_link.sh: the bench gave no correct sealed ring row")
ratio, target = ring[0]["speedup_vs_plain"], float(sys.argv[2])
print(f"sealed/plain busbw: {ratio:.3f} (target >= {target}: {'met' if ratio >= target else 'missed'})")
EOF
