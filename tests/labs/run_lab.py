#!/usr/bin/env python3
"""Runs the checked commands of a teetrain lab (docs/labs/NN-*.md) and checks their output.

Usage: run_lab.py TEETRAIN_BINARY LAB.md [LAB.md ...] [--same-dir] [--keep] [--verbose] [--list]
                  [--burners N] [--page] [--times]

The convention (docs/labs/README.md, "How the labs are checked"), chosen to render as ordinary
code blocks on GitHub:

  ```bash setup                the handout's Setup, run first, exactly as a student types it, with
                               `/path/to/teetrain/build` replaced by the binary's directory and
                               `/path/to/teetrain` by the repository; every handout has one
  ```bash lab                  a runnable block: run with bash, must exit 0
  ```bash lab exit=3           ... must exit with status 3 exactly
  ```bash lab timeout=90       ... is killed after 90 s (default 120 s)
  ```text expect               the expected output of the runnable block just before it: every
                               line (trimmed) must occur in the block's stdout+stderr; a line that
                               is just `...` is ignored; `...` inside a line matches anything on
                               one output line (e.g. `done: 4 steps, loss ... params_sha256`)
  ```bash lab id=NAME          a runnable block with a name, whose expected output is kept elsewhere:
  ```text expect id=NAME       ... in a later file of the same run (a teacher's guide, so that the
                               handout shows no expected output): anywhere in it, checked when
                               the named block runs. A name used twice, or an expect id=NAME
                               without its block, breaks the convention (exit 2)

Any other block (```bash without `lab`, ```text without `expect`) is shown to the reader and never
run: that is where long or optional commands go. An `expect` block must follow a runnable block
with no other code block between them (prose is fine).

A lab runs as a student runs it: in a clean environment (a fresh, empty HOME and what a login shell
has: the system PATH, LANG, USER; no variable of the caller's, so nothing the Setup does not set),
starting with its Setup block (which makes and enters its folder under ~), then every runnable
block in order (files persist from block to block, as in a student's terminal); with --same-dir, all the given files share one
directory and one shell state, in order: a teacher's guide (docs/labs/teachers/NN-*.md) continues
from where its lab's handout left off, and may have no runnable block of its own; each block is its own `bash -e` process (a failing
command ends the block; a pipeline's status is its last command's, as in a terminal, so
`... | head` is safe), and what it exports and its last working directory carry over to the next
block. Whatever a lab needs (the binary on PATH, TEETRAIN_REPO, Open MPI's run-as-root settings)
its Setup must export, as the student's terminal would. A documentation page that is not a lab
(--page, e.g. docs/multihost.md) is read by someone already set up: it runs in the caller's
environment with the binary's folder first on PATH, and has no Setup block.

--burners N keeps N CPU-burning processes running beside the lab: a lab whose claims rest on
virtual time (labs 4 and 6) must pass while the machine is busy.

--times prints, after a lab that passed, how long a student needs for it (Note [Lab times]): each
step's measured run time (the blocks under each `### N.` heading of the handout), and the reading,
typing and answering time estimated from the handout's size, with the date, the cores and the load.

Exit status: 0 if every block of every lab passed; 1 on the first failure, after printing the lab,
the block's line, its command, what was wrong and the tail of its output; 2 on bad usage or a lab
file that breaks the convention.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TIMEOUT = 120.0
TAIL_LINES = 40
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


class LabError(Exception):
    """The lab file does not follow the convention (exit 2)."""


@dataclass
class Block:
    line: int                      # 1-based line of the opening fence
    lang: str
    words: list[str]
    body: str
    exit_code: int = 0
    timeout: float = DEFAULT_TIMEOUT
    expect: list[str] = field(default_factory=list)
    expect_line: int = 0
    expect_path: str = ""          # where the expect block is, when not right after the command
    ident: str = ""                # id=NAME: its expect block may be in a later file (Note [Kept expectations])

    @property
    def runnable(self) -> bool:
        return "lab" in self.words or self.setup

    @property
    def setup(self) -> bool:
        return "setup" in self.words


def fenced_blocks(path: str) -> list[Block]:
    """Every fenced code block of a Markdown file, with the line of its opening fence."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group("fence"), m.group("info").strip(), i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence) \
                    and not close.group("info").strip():
                break
            body.append(lines[i])
            i += 1
        else:
            raise LabError(f"{path}:{start + 1}: code block never closed")
        i += 1
        words = info.split()
        blocks.append(Block(line=start + 1, lang=words[0] if words else "", words=words[1:],
                            body="\n".join(body)))
    return blocks


def expected_lines(body: str) -> list[str]:
    return [ln.strip() for ln in body.split("\n") if ln.strip() and ln.strip() != "..."]


def parse_lab(path: str, kept: dict[str, Block] | None = None) -> list[Block]:
    """The runnable blocks of a lab, each with its options and expected lines; `expect id=NAME`
    blocks go into `kept`, by name, for attach_kept."""
    runnable: list[Block] = []
    previous: Block | None = None
    for b in fenced_blocks(path):
        ident = next((w.partition("=")[2] for w in b.words if w.startswith("id=")), "")
        if b.lang == "text" and "expect" in b.words and ident:
            if kept is not None and ident in kept:
                raise LabError(f"{path}:{b.line}: a second `expect id={ident}` block")
            if kept is not None:
                kept[ident] = Block(line=b.line, lang=b.lang, words=b.words, body=b.body,
                                    expect=expected_lines(b.body), expect_path=path)
        elif b.lang == "text" and "expect" in b.words:
            if previous is None or not previous.runnable:
                raise LabError(f"{path}:{b.line}: an `expect` block must follow a ```bash lab block")
            if previous.expect_line:
                raise LabError(f"{path}:{b.line}: a second `expect` block for the command at line {previous.line}")
            previous.expect = expected_lines(b.body)
            previous.expect_line = b.line
        elif b.runnable:
            if b.lang not in ("bash", "sh", "shell", "console"):
                raise LabError(f"{path}:{b.line}: runnable blocks are ```bash lab (got ```{b.lang})")
            if b.setup and (runnable or "lab" in b.words):
                raise LabError(f"{path}:{b.line}: the ```bash setup block comes before every ```bash lab block,"
                               " once")
            for w in b.words:
                if w in ("lab", "setup"):
                    continue
                key, _, value = w.partition("=")
                try:
                    if key == "exit":
                        b.exit_code = int(value)
                    elif key == "timeout":
                        b.timeout = float(value)
                    elif key == "id" and value:
                        b.ident = value
                    else:
                        raise ValueError
                except ValueError:
                    raise LabError(f"{path}:{b.line}: unknown option {w!r} (lab, setup, exit=N, timeout=S, id=NAME)") from None
            runnable.append(b)
        previous = b
    return runnable


# Note [Kept expectations]
# A handout must not print what its commands output (students would copy it instead of running
# them), yet the test must still check that output. So a handout's block can carry a name
# (```bash lab id=NAME) and its expected lines live in the teacher's guide (```text expect id=NAME),
# which the test reads together with the handout (--same-dir): attach_kept moves them onto the
# block before anything runs, so they are checked when the handout's block runs, as a student runs it.
def attach_kept(plan: list[tuple[str, list[Block]]], kept: dict[str, Block]) -> None:
    by_name: dict[str, tuple[str, Block]] = {}
    for path, blocks in plan:
        for b in blocks:
            if b.ident in by_name:
                raise LabError(f"{path}:{b.line}: a second block named id={b.ident} ({by_name[b.ident][0]})")
            if b.ident:
                by_name[b.ident] = (path, b)
    for name, e in kept.items():
        if name not in by_name:
            raise LabError(f"{e.expect_path}:{e.line}: `expect id={name}` names no ```bash lab id={name} block")
        path, b = by_name[name]
        if b.expect_line:
            raise LabError(f"{e.expect_path}:{e.line}: the block id={name} ({path}:{b.line}) has its own expect block")
        b.expect, b.expect_line, b.expect_path = e.expect, e.line, e.expect_path


# Note [Lab times]
# A lab's time is mostly the student's, not the machine's: reading the handout, typing each checked
# block and reading its output, answering the questions. Only the commands' run time can be measured
# (here, from a fresh directory, as a student runs them); the rest is estimated from the handout at
# these rates, which docs/labs/README.md ("Times") states and every handout's header and course.md
# use. A step's run time is the sum of the blocks under its `### N.` heading.
READING_WORDS_PER_MINUTE = 130   # technical text with commands in it
MINUTES_PER_BLOCK = 1.5          # type one checked block and read its output
MINUTES_PER_QUESTION = 4


@dataclass
class Walk:
    """What one walk through a lab measured: run seconds per step heading, in the handout's order."""
    path: str
    steps: dict[str, float] = field(default_factory=dict)
    blocks: int = 0
    load_start: float = 0.0


def handout_size(path: str) -> tuple[int, int]:
    """(words, questions) of a handout: every whitespace-separated word a student reads, commands
    included; the numbered items under its `## Questions` heading."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    _, _, questions = text.partition("\n## Questions\n")
    questions = questions.split("\n## ")[0]
    return len(text.split()), len(re.findall(r"^\d+\. ", questions, flags=re.M))


def step_of(path: str, line: int) -> str:
    """The `## Setup` or `### N. ...` heading above a line of a handout."""
    with open(path, encoding="utf-8") as f:
        above = f.read().split("\n")[:line]
    for text in reversed(above):
        if text.startswith("### ") or text.startswith("## "):
            return text.lstrip("#").strip()
    return "(before any heading)"


def print_times(walk: Walk, total_secs: float) -> None:
    words, questions = handout_size(walk.path)
    reading = words / READING_WORDS_PER_MINUTE
    typing = walk.blocks * MINUTES_PER_BLOCK
    answering = questions * MINUTES_PER_QUESTION
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"== times of {walk.path}: walked {when} on {os.cpu_count()} cores, load {walk.load_start:.1f}"
          f" at the start and {os.getloadavg()[0]:.1f} at the end (1-minute averages)", flush=True)
    for step, secs in walk.steps.items():
        print(f"   {step[:48]:48s} {secs:7.1f} s", flush=True)
    print(f"   commands  {walk.blocks} checked block(s) ran in {total_secs:.1f} s", flush=True)
    print(f"   estimate  reading {words:,} words at {READING_WORDS_PER_MINUTE} words/min = {reading:.0f} min;"
          f" {walk.blocks} blocks typed and read at {MINUTES_PER_BLOCK:g} min = {typing:.0f} min;"
          f" {questions} questions at {MINUTES_PER_QUESTION} min = {answering:.0f} min", flush=True)
    total = reading + typing + answering + total_secs / 60
    print(f"   total     about {5 * round(total / 5)} min ({total:.0f}; the commands' run time included)", flush=True)


def line_matches(expected: str, output_lines: list[str]) -> bool:
    """`expected` occurs in one output line; `...` inside it matches anything on that line."""
    parts = [p.strip() for p in expected.split("...")]
    pattern = re.compile(".*".join(re.escape(p) for p in parts))
    return any(pattern.search(ln) for ln in output_lines)


# A fresh login shell's environment: a student's terminal before the lab's Setup. Nothing of the
# caller's (CTest's Open MPI settings, a developer's TEETRAIN_REPO) may leak in, or a lab whose Setup
# forgets a variable would pass here and fail for the student.
LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def lab_env(home: str) -> dict[str, str]:
    env = {"HOME": home, "PATH": LOGIN_PATH, "LANG": "C.UTF-8", "SHELL": "/bin/bash"}
    for name in ("USER", "LOGNAME"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def setup_script(b: Block, binary: str) -> Block:
    """The Setup block as the student runs it: the placeholder paths become this checkout's."""
    body = b.body.replace("/path/to/teetrain/build", os.path.dirname(binary)).replace("/path/to/teetrain", REPO)
    return Block(line=b.line, lang=b.lang, words=b.words, body=body, exit_code=b.exit_code, timeout=b.timeout,
                 expect=b.expect, expect_line=b.expect_line, expect_path=b.expect_path, ident=b.ident)


def block_script(b: Block, state_dir: str) -> str:
    """The block's commands, wrapped so that exports and the working directory carry over."""
    state = shlex.quote(os.path.join(state_dir, "env.sh"))
    return (f"[ -f {state} ] && . {state}\n"
            f"trap 'rc=$?; {{ export -p | grep -v -E \"^declare -x (PWD|OLDPWD|SHLVL|_)=\"; "
            f"printf \"cd %q\\n\" \"$PWD\"; }} > {state}; exit $rc' EXIT\n"
            "set -e\n"
            f"{b.body}\n")


def run_block(b: Block, cwd: str, env: dict[str, str], state_dir: str) -> tuple[int | None, str, float]:
    """Runs one block; returns (exit status or None on timeout, combined output, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", block_script(b, state_dir)], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=b.timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the block's whole process group (mpirun and its ranks)
        out, _ = proc.communicate()
        rc = None
    return rc, out.decode("utf-8", errors="replace"), time.monotonic() - t0


def fail(path: str, b: Block, what: str, output: str) -> None:
    tail = output.rstrip("\n").split("\n")[-TAIL_LINES:]
    print(f"\nLAB FAILED: {path}:{b.line}", flush=True)
    print("command:", flush=True)
    for ln in b.body.split("\n"):
        print(f"    {ln}", flush=True)
    print(what, flush=True)
    print(f"last {len(tail)} line(s) of its output:", flush=True)
    for ln in tail:
        print(f"  | {ln}", flush=True)


def page_env(binary: str) -> dict[str, str]:
    """A documentation page's reader: already set up (the caller's environment), the binary first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env.get("PATH", LOGIN_PATH)
    return env


def run_lab(paths: list[str], binary: str, keep: bool, verbose: bool, page: bool = False,
            times: bool = False) -> bool:
    """Runs the files' blocks in order in one fresh directory (a lab, or a lab and its teacher's guide).
    A page (--page) is a documentation page, not a lab: its reader is set up already, so it runs in the
    caller's environment and needs no Setup block."""
    kept: dict[str, Block] = {}
    plan = [(path, parse_lab(path, kept)) for path in paths]
    if not any(not b.setup for b in plan[0][1]):
        raise LabError(f"{paths[0]}: no runnable block (```bash lab)")
    if not page:
        if not plan[0][1][0].setup:
            raise LabError(f"{paths[0]}: no ```bash setup block: a lab starts from its Setup, as a student does")
        plan[0][1][0] = setup_script(plan[0][1][0], binary)
    for path, blocks in plan[1:]:
        if any(b.setup for b in blocks):
            raise LabError(f"{path}: a continuation (--same-dir) has no Setup of its own")
    attach_kept(plan, kept)
    work = tempfile.mkdtemp(prefix="teetrain-lab-home-")  # the student's HOME; the Setup makes the lab's folder
    state = tempfile.mkdtemp(prefix="teetrain-lab-state-")
    env = page_env(binary) if page else lab_env(work)
    name = " + ".join(paths)
    count = sum(len(blocks) for _, blocks in plan)
    print(f"== {name}: {count} checked block(s) in {work}", flush=True)
    t_lab = time.monotonic()
    walk = Walk(path=paths[0], load_start=os.getloadavg()[0])
    ok = True
    try:
        for path, blocks in plan:
            for b in blocks:
                secs = run_one(path, b, work, env, state, verbose)
                if secs is None:
                    ok = False
                    break
                step = step_of(path, b.line) if path == paths[0] else f"{os.path.basename(path)} (not the student's)"
                walk.steps[step] = walk.steps.get(step, 0.0) + secs
                walk.blocks += 0 if b.setup or path != paths[0] else 1
            if not ok:
                break
    finally:
        if keep:
            print(f"  (working directory kept: {work})", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
            if not ok:
                print("  (run again with --keep to keep the working directory, --verbose to see every output)",
                      flush=True)
        shutil.rmtree(state, ignore_errors=True)
    print(f"== {name}: {'passed' if ok else 'FAILED'} in {time.monotonic() - t_lab:.1f} s", flush=True)
    if ok and times:
        print_times(walk, sum(s for step, s in walk.steps.items() if "not the student's" not in step))
    return ok


def run_one(path: str, b: Block, work: str, env: dict[str, str], state: str, verbose: bool) -> float | None:
    """Runs one block and checks its exit status and expected lines; prints the verdict. Returns its
    run time in seconds, or None when it failed."""
    rc, out, secs = run_block(b, work, env, state)
    first = b.body.strip().split("\n")[0] if b.body.strip() else "(empty)"
    if verbose:
        print(out, end="" if out.endswith("\n") or not out else "\n")
    if rc is None:
        fail(path, b, f"timed out after {b.timeout:g} s (raise it with `lab timeout=S`)", out)
        return None
    if rc != b.exit_code:
        fail(path, b, f"exit status {rc}, expected {b.exit_code}", out)
        return None
    lines = out.split("\n")
    missing = [e for e in b.expect if not line_matches(e, lines)]
    if missing:
        where = f" (expect block at {b.expect_path + ':' if b.expect_path else 'line '}{b.expect_line})"
        fail(path, b, f"expected line(s) not in the output{where}:\n" + "\n".join(f"    {m}" for m in missing), out)
        return None
    where = f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}/{os.path.basename(path)}:{b.line}"
    print(f"  ok  {where:36s} {secs:6.1f} s  exit {rc}  {len(b.expect)} expected line(s)  {first[:60]}", flush=True)
    return secs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="the teetrain binary (its directory goes first on PATH)")
    ap.add_argument("labs", nargs="+", help="lab Markdown files")
    ap.add_argument("--keep", action="store_true", help="keep each lab's working directory")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every block's output")
    ap.add_argument("--list", action="store_true", help="list the checked blocks and exit")
    ap.add_argument("--same-dir", action="store_true",
                    help="run all the files in one directory, in order (a lab, then its teacher's guide)")
    ap.add_argument("--page", action="store_true",
                    help="a documentation page, not a lab: run it in the caller's environment, without a Setup")
    ap.add_argument("--times", action="store_true",
                    help="after each lab, its steps' run times and the student's time estimated from the handout")
    ap.add_argument("--burners", type=int, default=0,
                    help="keep this many CPU-burning processes running beside the lab")
    args = ap.parse_args()
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(max(0, args.burners))]
    try:
        return run(args)
    finally:
        for b in burners:
            b.kill()
            b.wait()


def run(args) -> int:
    binary = os.path.abspath(args.binary)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"run_lab.py: {args.binary}: not an executable file", file=sys.stderr)
        return 2
    try:
        if args.list:
            for path in args.labs:
                for b in parse_lab(path):
                    opts = f"exit={b.exit_code} timeout={b.timeout:g}"
                    first = (b.body.strip().splitlines() or ["(empty)"])[0]
                    print(f"{path}:{b.line}  {opts}  {len(b.expect)} expected  {first}")
            return 0
        for group in ([args.labs] if args.same_dir else [[path] for path in args.labs]):
            if not run_lab(group, binary, args.keep, args.verbose, args.page, args.times):
                return 1
    except (LabError, OSError) as e:
        print(f"run_lab.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
