#!/usr/bin/env python3
"""Self-test of run_lab.py: a good lab passes, and every way of breaking it fails the runner.

Usage: selftest.py TEETRAIN_BINARY

fixtures/good.md exercises the convention (its Setup run in a clean environment, state carried
across blocks, exports, `cd`, blocks that are shown but not run, `exit=3`, `...` wildcards). Each
mutation below breaks one command or one expected line of a copy of it, and the runner must then
exit 1 (2 for a lab that breaks the convention) and say where. Finally every lab under docs/labs/
must parse: at least one checked block, and no expect block without its command.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_lab.py")
REPO = os.path.dirname(os.path.dirname(HERE))
GOOD = os.path.join(HERE, "fixtures", "good.md")
CONTINUED = os.path.join(HERE, "fixtures", "good-continued.md")

# name, (old, new) replacements in good.md, expected runner exit, strings its output must contain
MUTATIONS = [
    ("wrong expected line", [("carried over in sub\n", "carried over in the wrong place\n")], 1,
     ["expected line(s) not in the output", "carried over in the wrong place", ":30\n"]),
    ("wrong wildcard line", [("step 4, loss ... s/step", "step 5, loss ... s/step")], 1,
     ["step 5, loss ... s/step"]),
    ("broken command", [("cat ../note.txt\n", "cat ../no-such-note.txt\n")], 1,
     ["exit status 1, expected 0", "no-such-note.txt: No such file"]),
    ("failure no longer fails", [("exit 3\n```", "exit 0\n```")], 1, ["exit status 0, expected 3"]),
    ("fails with another code", [("exit 3\n```", "exit 2\n```")], 1, ["exit status 2, expected 3"]),
    ("error in the middle of a block", [("mkdir -p sub && cd sub\n", "false\nmkdir -p sub && cd sub\n")], 1,
     ["exit status 1, expected 0", ":13\n"]),
    ("state not created", [('echo "hello from the lab" > note.txt\n', 'echo "hello from the lab"\n')], 1,
     ["note.txt: No such file"]),
    ("timeout", [("```bash lab timeout=30\nsleep 0.1", "```bash lab timeout=1\nsleep 30")], 1,
     ["timed out after 1 s"]),
    ("expect block after a shown block", [("exit 42\n```\n", "exit 42\n```\n\n```text expect\nhello\n```\n")], 2,
     ["an `expect` block must follow"]),
    # The runner passes nothing of its own caller's environment: a Setup that forgets a variable fails.
    ("setup forgets TEETRAIN_REPO", [("export TEETRAIN_REPO=/path/to/teetrain\n", "")], 1,
     ["exit status 1, expected 0"]),
    ("setup forgets an Open MPI setting", [("export OMPI_MCA_pml=ob1\n", "")], 1, ["exit status 1, expected 0"]),
    ("setup does not put teetrain on PATH", [("export PATH=/path/to/teetrain/build:$PATH\n", "")], 1,
     ["teetrain: command not found"]),
    ("no setup block", [("```bash setup\n", "```bash\n")], 2, ["no ```bash setup block"]),
    ("unknown option", [("```bash lab exit=3", "```bash lab exit=3 retries=2")], 2, ["unknown option"]),
]


def run(binary, *labs):
    p = subprocess.run([sys.executable, RUNNER, binary, *labs], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    return p.returncode, p.stdout


def kept_expectations(binary):
    """Note [Kept expectations]: an expected line kept in the continuation is checked against the
    handout's block (a wrong one fails it and names where it is), and one naming no block is refused."""
    fails = 0
    continued = open(CONTINUED).read()
    cases = [("kept expected line wrong", ("its expected line is in the continuation\n```",
                                           "a line the block does not print\n```"), 1,
              ["good.md:64", "good-continued.md:", "a line the block does not print"]),
             ("kept expectation names no block", ("expect id=kept", "expect id=nosuch"), 2,
              ["`expect id=nosuch` names no ```bash lab id=nosuch block"])]
    with tempfile.TemporaryDirectory() as tmp:
        for name, (old, new), want_rc, want_text in cases:
            assert continued.count(old) == 1, f"{name}: {old!r} is not in good-continued.md exactly once"
            path = os.path.join(tmp, "good-continued.md")
            with open(path, "w") as f:
                f.write(continued.replace(old, new))
            rc, out = run(binary, GOOD, path, "--same-dir")
            missing = [w for w in want_text if w not in out]
            if rc != want_rc or missing:
                print(f"FAIL: {name}: exit {rc} (want {want_rc}), missing {missing} in:\n{out}")
                fails += 1
            else:
                print(f"ok: {name}: the runner exits {rc}")
    return fails


def lab_times(binary):
    """Note [Lab times]: --times reports each step's run time under its heading, and estimates the
    student's time from the handout's own words and questions at the stated rates."""
    rc, out = run(binary, GOOD, "--times")
    words = len(open(GOOD).read().split())
    want = ["== times of", f"reading {words:,} words at 130 words/min", "commands  5 checked block(s) ran in",
            "0 questions at 4 min", "(before any heading)", "total     about "]
    missing = [w for w in want if w not in out]
    if rc != 0 or missing:
        print(f"FAIL: --times (exit {rc}), missing {missing} in:\n{out}")
        return 1
    print("ok: --times reports the steps' run times and the estimate")
    return 0


def header_times(labs):
    """Note [Lab times]: a handout's header states the words and checked commands its time was
    estimated from; they must be the handout's own (within 5% for words, as the header's own edits
    move the count), so that a lab that grows says so."""
    sys.path.insert(0, HERE)
    from run_lab import handout_size, parse_lab
    fails = 0
    for lab in labs:
        text = open(lab, encoding="utf-8").read()
        m = re.search(r"^\| time \| .*?reading \d+ \(([\d,]+) words\), steps \d+ \((\d+) checked commands\)", text, re.M)
        words, _ = handout_size(lab)
        blocks = sum(1 for b in parse_lab(lab) if not b.setup)
        if not m:
            print(f"FAIL: {lab}: no `| time | ... reading R (W words), steps S (N checked commands)` header")
            fails += 1
        elif abs(int(m.group(1).replace(",", "")) - words) > 0.05 * words or int(m.group(2)) != blocks:
            print(f"FAIL: {lab}: its header says {m.group(1)} words and {m.group(2)} checked commands; it has"
                  f" {words:,} and {blocks} (walk it again: run_lab.py --times)")
            fails += 1
    return fails


def main():
    binary = sys.argv[1]
    fails = 0
    rc, out = run(binary, GOOD)
    if rc != 0:
        print(f"FAIL: the good fixture does not pass (exit {rc}):\n{out}")
        fails += 1
    elif out.count("  ok  ") != 6:
        print(f"FAIL: the good fixture should run exactly its Setup and 5 checked blocks:\n{out}")
        fails += 1
    # A teacher's guide continues in its lab's directory and shell state (--same-dir), and only there.
    rc, out = run(binary, GOOD, CONTINUED, "--same-dir")
    if rc != 0 or out.count("  ok  ") != 7 or "good.md:64 " not in out or "1 expected line(s)  echo \"its" not in out:
        print(f"FAIL: good.md + good-continued.md with --same-dir should pass 7 blocks, good.md's id=kept block"
              f" with the continuation's expected line (exit {rc}):\n{out}")
        fails += 1
    fails += kept_expectations(binary)
    fails += lab_times(binary)
    rc, out = run(binary, GOOD, CONTINUED)
    if rc != 2 or "no ```bash setup block" not in out:
        print(f"FAIL: good-continued.md alone has no Setup and should be refused (exit {rc}):\n{out}")
        fails += 1
    good = open(GOOD).read()
    with tempfile.TemporaryDirectory() as tmp:
        for name, edits, want_rc, want_text in MUTATIONS:
            text = good
            for old, new in edits:
                assert text.count(old) == 1, f"mutation {name!r}: {old!r} is not in good.md exactly once"
                text = text.replace(old, new)
            lab = os.path.join(tmp, name.replace(" ", "_") + ".md")
            with open(lab, "w") as f:
                f.write(text)
            rc, out = run(binary, lab)
            missing = [w for w in want_text if w not in out]
            if rc != want_rc or missing:
                print(f"FAIL: {name}: exit {rc} (want {want_rc}), missing {missing} in:\n{out}")
                fails += 1
            else:
                print(f"ok: {name}: the runner exits {rc}")
    labs = sorted(glob.glob(os.path.join(REPO, "docs", "labs", "[0-9][0-9]-*.md")))
    for lab in labs:
        p = subprocess.run([sys.executable, RUNNER, binary, lab, "--list"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or not p.stdout.strip():
            print(f"FAIL: {lab} does not parse or has no checked block:\n{p.stdout}")
            fails += 1
    fails += header_times(labs)
    # Teacher's guides may have no checked block of their own, but must parse, and belong to a lab.
    guides = sorted(glob.glob(os.path.join(REPO, "docs", "labs", "teachers", "[0-9][0-9]-*.md")))
    for guide in guides:
        p = subprocess.run([sys.executable, RUNNER, binary, guide, "--list"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        lab = os.path.join(REPO, "docs", "labs", os.path.basename(guide))
        if p.returncode != 0 or not os.path.isfile(lab):
            print(f"FAIL: {guide} does not parse, or has no lab {lab}:\n{p.stdout}")
            fails += 1
    total = len(MUTATIONS) + 6 + 2 * len(labs) + len(guides)
    print(f"{total - fails} passed, {fails} failed ({len(labs)} labs, {len(guides)} teacher's guides parsed)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
