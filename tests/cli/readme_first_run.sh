#!/usr/bin/env bash
# Every command of the README's "A first run" runs as a reader runs it: the block is read from
# README.md (so it cannot drift from what is tested), each command is run in order in a fresh
# directory with the built binary for build/teetrain, and only the step counts are cut (600 -> 6; a
# train command left at the default 200 steps runs 4) so the suite stays short. Each must exit 0; the sampled text, the resumed run and the sealed P = 2 run
# are checked for what the README says they do.
source "$(dirname "$0")/lib.sh" "$@"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
[[ -d /usr/share/games/fortunes ]] ||
  { echo "FAIL: /usr/share/games/fortunes is missing (scripts/install-deps.sh installs fortunes)"; exit 1; }

# The block's commands, one per line: continuations joined, comments dropped; `train ...` stands for
# the train command before it.
mapfile -t cmds < <(python3 - "$REPO/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"^## A first run\n+```bash\n(.*?)^```", text, re.S | re.M).group(1)
joined = re.sub(r"\\\n\s*", " ", block)
last_train = None
for line in joined.splitlines():
    line = re.sub(r"\s+#.*$", "", line).strip()
    if not line or line.startswith("#"):
        continue
    if " train ... " in line + " ":
        base = re.sub(r"--steps \d+", "", last_train)
        line = line.replace("train ...", "train" + base.split(" train", 1)[1])
    elif " train " in line:
        last_train = line
    print(line)
PY
)
[[ ${#cmds[@]} -ge 9 ]] && passes=$((passes + 1)) ||
  { echo "FAIL: found ${#cmds[@]} commands in the README's first run"; fails=$((fails + 1)); }

cd "$WORK"
mkdir -p runs
for c in "${cmds[@]}"; do
  # The reader's steps, cut; mpirun as root in CI (the README's comment says to add the flag there).
  run=$(sed -E -e 's#(^| )build/teetrain #\1'"$TT"' #g' \
    -e 's/--steps 1200/--steps 8/; s/--steps 600/--steps 6/; s/--steps 200/--steps 4/' \
    -e 's/--save-every 200/--save-every 3/; s/--val-every 100/--val-every 3/' \
    -e 's/^mpirun /mpirun --allow-run-as-root /' <<<"$c")
  # A train command that leaves --steps at its default (200) runs 4.
  [[ "$run" == *" train "* && "$run" != *"--steps"* ]] && run+=" --steps 4"
  name=$(cut -c1-60 <<<"$c")
  if eval "timeout 600 $run" >"$WORK/out.log" 2>&1; then passes=$((passes + 1)); else
    echo "FAIL: README command exits $?: $c"; tail -5 "$WORK/out.log"; fails=$((fails + 1)); fi
  case "$c" in
    *" sample "*)
      [[ $(wc -c <"$WORK/out.log") -gt 20 ]] && passes=$((passes + 1)) ||
        { echo "FAIL: sample printed almost nothing"; fails=$((fails + 1)); } ;;
    *"--resume runs/ckpt"*)
      grep -q "resumed from" "$WORK/out.log" && passes=$((passes + 1)) ||
        { echo "FAIL: the resumed run did not resume: $name"; fails=$((fails + 1)); } ;;
    *"--tee fast"*)
      grep -qE "^done: .*params_sha256" "$WORK/out.log" && grep -q "tee fast" "$WORK/out.log" &&
        passes=$((passes + 1)) || { echo "FAIL: the sealed run's banner or result line"; fails=$((fails + 1)); } ;;
  esac
done
finish
