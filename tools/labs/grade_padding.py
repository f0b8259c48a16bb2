#!/usr/bin/env python3
"""The autograder of assignment 7 (docs/labs/07-assignment.md): does a padding policy hide, from the
sizes of sealed messages, which model of its anonymity set the ranks train, and at what cost?

Usage:
  grade_padding.py POLICY.py [--teetrain BIN] [--captures DIR]

POLICY.py defines ANONYMITY_SET ({model: parameters}) and padded_size(kind, payload_bytes, world)
(tools/labs/assignment/padding.py is the starter). The grader trains every model of the set for
STEPS steps on WORLD ranks under `--tee fast` with `--adversary snoop:DIR`, reads the size of every
`broadcast` and `gradients` message the adversary saw (its payload: the wire size less the
SEAL_OVERHEAD bytes of tag and clear header, docs/labs/figures/sealed-message.svg), applies the
policy, and checks three things, one line each:

  valid    padded_size returns an int >= the payload for every message (padding never truncates)
  hidden   on every link, the padded sizes form the same sequence for every model of the set: the
           adversary's view of these messages is the same whichever model runs
  cost     the padded bytes, over all models, are at most COST_SLACK times the least any policy
           that hides them can send: sizes that must look alike (the same place in two models'
           sequences) are joined, and each group is padded to its largest member

Exit 0 when all three pass, 1 when one fails (its line says which message or what to change),
2 on bad input (no policy file, no padded_size, a model the binary does not know). With
--captures DIR, the runs' captures go to (and, when present for every model, are read back from)
DIR: a teacher grades from fresh runs.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # importing the policy must leave no cache beside it

WORLD = 2
STEPS = 2
SEAL_OVERHEAD = 28  # tag (16) + key epoch (4) + nonce counter (8): comm/secure/seal_streams.h
PADDED_KINDS = ("broadcast", "gradients")  # the messages whose sizes follow the model
COST_SLACK = 1.05
HOST_AEAD_GBPS = 3.36  # cc's modelled host (docs/labs/04-cost.md): what padding costs it to seal
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_pml": "ob1"}


def bad_input(message: str) -> None:
    print(f"grade_padding.py: {message}", file=sys.stderr)
    sys.exit(2)


def load_policy(path: str):
    if not os.path.isfile(path):
        bad_input(f"no policy file {path}: copy tools/labs/assignment/padding.py and edit its patch points")
    spec = importlib.util.spec_from_file_location("student_padding", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the student's file: report, never a traceback
        bad_input(f"{path} does not load: {type(e).__name__}: {e}")
    for name in ("ANONYMITY_SET", "padded_size"):
        if not hasattr(module, name):
            bad_input(f"{path} defines no {name}: keep the starter's names (tools/labs/assignment/padding.py)")
    if not isinstance(module.ANONYMITY_SET, dict) or len(module.ANONYMITY_SET) < 2:
        bad_input(f"{path}: ANONYMITY_SET must name at least two models, e.g. {{'gpt2-tiny': 34688, 'bert-tiny': 36161}}")
    return module


def run(cmd: list[str], cwd: str) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240,
                         env={**os.environ, **MPI_ENV})
    if res.returncode != 0:
        tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
        code = 2 if res.returncode == 2 else 1
        print(f"grade_padding.py: `{' '.join(cmd)}` exited {res.returncode}: {' | '.join(tail)}", file=sys.stderr)
        sys.exit(code)


def capture(teetrain: str, work: str, models: list[str]) -> None:
    """One sealed, snooped run per model on the same data, ranks and steps: only the model differs."""
    if all(glob.glob(os.path.join(work, f"cap-{m}", "link_*.tsv")) for m in models):
        return
    os.makedirs(os.path.join(work, "text"), exist_ok=True)
    with open(os.path.join(work, "text", "notes.txt"), "w", encoding="utf-8") as f:
        f.writelines(f"Note {i}: the model's name is a trade secret.\n%\n" for i in range(200))
    run([teetrain, "prepare-text", "text", "--out", "data", "--name", "notes"], work)
    run([teetrain, "provision", "--out", "vendor", "--devices", str(WORLD)], work)
    for m in models:
        shutil.rmtree(os.path.join(work, f"cap-{m}"), ignore_errors=True)
        run(["mpirun", "-np", str(WORLD), teetrain, "train", "--model", m, "--data", "data/notes", "--batch", "2",
             "--seq", "32", "--steps", str(STEPS), "--threads", "1", "--no-progress", "--quiet", "--tee", "fast",
             "--allow-plain-data", "--trust-root", "vendor/vendor_root.crt",
             "--device-identity", "vendor/device_{rank}.pem", "--adversary", f"snoop:cap-{m}"], work)


def payloads(work: str, model: str) -> dict[str, list[tuple[str, int]]]:
    """{link: [(kind, payload bytes), ...]} in the order the adversary saw them (link_S_to_D.tsv)."""
    view = {}
    for tsv in sorted(glob.glob(os.path.join(work, f"cap-{model}", "link_*.tsv"))):
        link = os.path.basename(tsv)[len("link_"):-len(".tsv")].replace("_to_", "->")
        with open(tsv, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]  # seq kind tag bytes [first_bytes_hex]
        view[link] = [(r[1], int(r[3]) - SEAL_OVERHEAD) for r in rows if r[1] in PADDED_KINDS]
    return view


def least_cost(views: dict[str, dict]) -> int:
    """The fewest padded bytes any hiding policy sends: a union-find over (kind, size)."""
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    models = list(views)
    for link, msgs in views[models[0]].items():
        for other in models[1:]:
            for (kind, a), (_, b) in zip(msgs, views[other].get(link, [])):
                parent[find((kind, a))] = find((kind, b))
    largest: dict = {}
    for v in views.values():
        for msgs in v.values():
            for kind, n in msgs:
                root = find((kind, n))
                largest[root] = max(largest.get(root, 0), n)
    return sum(largest[find((k, n))] for v in views.values() for msgs in v.values() for k, n in msgs)


def check_valid(policy, views) -> tuple[bool, str]:
    for model, v in views.items():
        for link, msgs in v.items():
            for kind, n in msgs:
                try:
                    got = policy.padded_size(kind, n, WORLD)
                except Exception as e:  # the student's code: name the message it failed on
                    return False, f"padded_size({kind!r}, {n}, {WORLD}) raised {type(e).__name__}: {e}"
                if not isinstance(got, int) or got < n:
                    return False, (f"padded_size({kind!r}, {n}, {WORLD}) = {got!r} ({model}, link {link}): "
                                   "it must be an int >= the payload (padding adds bytes, never removes them)")
    return True, "padded_size returns an int >= the payload for every message"


def check_hidden(padded) -> tuple[bool, str]:
    models = list(padded)
    first = models[0]
    for other in models[1:]:
        for link in sorted(set(padded[first]) | set(padded[other])):
            a, b = padded[first].get(link, []), padded[other].get(link, [])
            if len(a) != len(b):
                return False, (f"link {link}: {first} sends {len(a)} such messages, {other} {len(b)}: "
                               "the count tells them apart (choose a set with as many buckets each)")
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    return False, (f"link {link}, message {i + 1} ({x[0]}): {first} {x[1]} bytes, {other} "
                                   f"{y[1]} bytes: the adversary tells the models apart")
    return True, f"every link carries the same padded sizes for {', '.join(models)}"


def main() -> int:
    ap = argparse.ArgumentParser(description="Grades a padding policy against traffic analysis (assignment 7).")
    ap.add_argument("policy")
    ap.add_argument("--teetrain", default=shutil.which("teetrain") or "teetrain")
    ap.add_argument("--captures", help="keep the runs' captures here (and reuse them when present)")
    args = ap.parse_args()
    policy = load_policy(args.policy)
    if shutil.which(args.teetrain) is None:
        bad_input(f"no teetrain binary at {args.teetrain}: put build/ on PATH or pass --teetrain build/teetrain")
    models = list(policy.ANONYMITY_SET)
    work = args.captures or tempfile.mkdtemp(prefix="grade_padding_")
    os.makedirs(work, exist_ok=True)
    try:
        capture(os.path.abspath(shutil.which(args.teetrain)), work, models)
        views = {m: payloads(work, m) for m in models}
    finally:
        if not args.captures:
            shutil.rmtree(work, ignore_errors=True)
    ok_valid, why_valid = check_valid(policy, views)
    results = [("valid", ok_valid, why_valid)]
    if ok_valid:
        padded = {m: {link: [(k, policy.padded_size(k, n, WORLD)) for k, n in msgs] for link, msgs in v.items()}
                  for m, v in views.items()}
        results.append(("hidden", *check_hidden(padded)))
        sent = sum(n for v in padded.values() for msgs in v.values() for _, n in msgs)
        raw = sum(n for v in views.values() for msgs in v.values() for _, n in msgs)
        least = least_cost(views)
        extra_ms = (sent - raw) / (HOST_AEAD_GBPS * 1e9) * 1e3
        results.append(("cost", sent <= COST_SLACK * least,
                        f"{sent} bytes padded from {raw} (+{100 * (sent - raw) / raw:.1f}%, {extra_ms:.3f} ms more "
                        f"sealing at {HOST_AEAD_GBPS} GB/s); the least that hides: {least} bytes, "
                        f"allowed {COST_SLACK:.2f}x that"))
    for name, ok, why in results:
        print(f"{name:7s}{'PASS' if ok else 'FAIL'}  {why}")
    passed = sum(ok for _, ok, _ in results)
    print(f"grade: {passed}/3 checks passed")
    return 0 if passed == 3 else 1


if __name__ == "__main__":
    sys.exit(main())
