#!/usr/bin/env bash
# tools/reproduce.py's report never mixes virtual-time results with wall-clock measurements: its
# virtual-time part (report-virtual.md) is byte-identical whether the grid ran alone or beside CPU
# burners (two per core), and report.md puts the measured runs in a part of their own, with checks of
# their own. A --cc-transfer-us that the paper's figures imply (8320.8 us, fitted on an earlier
# emulator) is reported as PAPER-FITTED, with today's fit beside it, not as "given".
source "$(dirname "$0")/lib.sh" "$@"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
REPRO="$(dirname "$0")/../../tools/reproduce.py"
make_corpus
grid() { # grid OUT: a slice of the quick grid in virtual time
  "$PY" "$REPRO" --quick --only ranks-emu --cc-transfer-us 8320.8 --bin "$TT" \
    --data "$WORK/data/tiny" --out "$1" >"$1.log" 2>&1
}
trap 'stop_burners; rm -rf "$WORK"' EXIT
check "the grid alone" grid "$WORK/alone"
start_burners
check "the grid beside CPU burners (two per core)" grid "$WORK/busy"
stop_burners
check "the virtual-time report is byte-identical under load" cmp "$WORK/alone/report-virtual.md" "$WORK/busy/report-virtual.md"
check "report.md separates the parts" "$PY" - "$WORK/alone/report.md" "$WORK/alone/report-virtual.md" <<'PY'
import sys
t, v = (open(p).read() for p in sys.argv[1:3])
assert t.startswith(v), "report.md does not begin with the virtual-time part"
one, two = t.index("# Part 1: virtual-time results"), t.index("# Part 2: wall-clock measurements")
assert one < two and "## Checks (virtual time)" in t[one:two] and "Slowdown vs ranks (emulated" in t[one:two]
assert "none in this grid" in t[two:] and "Slowdown vs ranks (real CPU compute)" not in t
assert "PAPER-FITTED: the number given is within 10%" in v, "the paper-fitted cost is not labelled"
PY
finish
