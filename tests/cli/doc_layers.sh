#!/usr/bin/env bash
# The floors of the code as the docs list them. README.md, docs/design.md §3, docs/architecture.md and
# docs/CONTRIBUTING.md each carry one line "Floors, lowest first: base → tee / core → ... → tools" (an
# arrow between floors, a slash between siblings on one floor) and list every floor as a folder (`name/`
# at the start of a line, or of a table row). Every doc's line must be the same, floor for floor and
# in the same order, and its floors must be the code's: the top-level folders with a CMakeLists.txt
# (tests/ aside: test code, not a floor), which must also be the folders tests/cli/layering.sh checks.
# Needs no binary (the argument is taken as by every CLI test). Runs from the repository root.
source "$(dirname "$0")/lib.sh" "$@"
cd "$(dirname "$0")/../.."
DOCS=(README.md docs/design.md docs/architecture.md docs/CONTRIBUTING.md)
FLOOR_LINE='^[*_]*Floors, lowest first:'

# code_floors: the top-level folders with a CMakeLists.txt, tests/ aside, one a line, sorted.
code_floors() {
  local f d
  for f in */CMakeLists.txt; do
    d="${f%/CMakeLists.txt}"
    [[ "$d" == tests ]] || echo "$d"
  done | sort
}

# layering_floors: the folders tests/cli/layering.sh walks for a README.md in each ("find A B ... -type d").
layering_floors() {
  sed -n 's/.*\$(find \([a-z ]*\) -type d.*/\1/p' tests/cli/layering.sh | head -1 | tr ' ' '\n' | sed '/^$/d' | sort
}

# floor_line DOC: DOC's floor line, normalised to "base>tee,core>comm,data,models>...": floors in order,
# ">" between floors, "," between siblings. Nothing when DOC has no such line or more than one.
floor_line() {
  local n
  n=$(grep -cE "$FLOOR_LINE" "$1" || true)
  [[ "$n" -eq 1 ]] || return 0
  grep -E "$FLOOR_LINE" "$1" | sed -e 's/^[^:]*://' -e 's/[`*_.]//g' -e 's/→/>/g' -e 's/->/>/g' \
    -e 's/[[:space:]]//g' -e 's#/#,#g'
}

# doc_problems DOC: what is wrong with DOC's floors, one line each; nothing when it is right.
doc_problems() {
  local doc="$1" line names f
  line=$(floor_line "$doc")
  if [[ -z "$line" ]]; then
    echo "$doc: no single line 'Floors, lowest first: ...'"
    return 0
  fi
  names=$(tr '>,' '\n\n' <<<"$line" | sed '/^$/d' | sort)
  [[ "$names" == "$FLOORS" ]] ||
    echo "$doc: its floors ($(echo $names)) are not the code's ($(echo $FLOORS))"
  [[ "$line" == "$REF" ]] || echo "$doc: its floor line ($line) differs from ${DOCS[0]}'s ($REF)"
  for f in $FLOORS; do
    grep -qE "^(\| \`)?$f/" "$doc" || echo "$doc: lists no folder $f/"
  done
}

FLOORS=$(code_floors)
LAYERING=$(layering_floors)
if [[ -n "$FLOORS" && "$FLOORS" == "$LAYERING" ]]; then passes=$((passes + 1)); else
  echo "FAIL: the folders with a CMakeLists.txt ($(echo $FLOORS)) are not tests/cli/layering.sh's ($(echo $LAYERING))"
  fails=$((fails + 1))
fi
REF=$(floor_line "${DOCS[0]}")
for doc in "${DOCS[@]}"; do
  out=$(doc_problems "$doc")
  if [[ -z "$out" ]]; then passes=$((passes + 1)); else echo "FAIL: $out"; fails=$((fails + 1)); fi
done

# The checker must also see a broken doc: one floor left out of a copy's floor line, and one floor's
# folder left out of a copy's layout.
mkdir -p "$WORK/docs"
sed '/Floors, lowest first:/s/ platform →//' docs/architecture.md >"$WORK/docs/architecture.md"
out=$(doc_problems "$WORK/docs/architecture.md")
if [[ "$(floor_line "$WORK/docs/architecture.md")" != *platform* && "$out" == *"are not the code's"* &&
  "$out" == *"differs from"* ]]; then passes=$((passes + 1)); else
  echo "FAIL: the check missed a floor line without platform: $out"; fails=$((fails + 1))
fi
sed '/^platform\//d' docs/CONTRIBUTING.md >"$WORK/docs/CONTRIBUTING.md"
out=$(doc_problems "$WORK/docs/CONTRIBUTING.md")
if [[ "$out" == *"lists no folder platform/"* ]]; then passes=$((passes + 1)); else
  echo "FAIL: the check missed a layout without platform/: $out"; fails=$((fails + 1))
fi
grep -v "$FLOOR_LINE" README.md >"$WORK/README.md" || true
out=$(doc_problems "$WORK/README.md")
if [[ "$out" == *"no single line"* ]]; then passes=$((passes + 1)); else
  echo "FAIL: the check missed a doc without its floor line: $out"; fails=$((fails + 1))
fi
finish
