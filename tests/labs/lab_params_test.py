#!/usr/bin/env python3
"""tools/labs/lab_params.py gives students different parameters, and the values it tells the teacher
are what the students' runs print.

Usage: lab_params_test.py TEETRAIN_BINARY

For three IDs: the parameters differ between IDs and not between calls; the lab-2 attack, run on 4
ranks, fails to open exactly where the teacher's value says; and the lab-4 run on the modelled host
(virtual time) seals for exactly the teacher's milliseconds per step. The teacher's guides of labs 2
and 4 state two students' values, which must be the tool's.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "labs", "lab_params.py")
STUDENTS = ("alice", "bob", "carol")  # cc and fast attacks, 2 and 4 ranks among them


def lab_params(binary, student):
    out = subprocess.run([sys.executable, TOOL, "--student", student, "--teacher", "--teetrain", binary, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=180)


def prepare(binary, work):
    os.makedirs(os.path.join(work, "records"))
    with open(os.path.join(work, "records", "clinic.txt"), "w", encoding="utf-8") as f:
        for i in range(1, 401):
            f.write(f"Patient {i:03d}, born 19{i % 90 + 10:02d}: diagnosis confidential, dose {i * 7 % 500} mg.\n%\n")
    for cmd in ([binary, "prepare-text", "records", "--out", "data", "--name", "clinic"],
                [binary, "provision", "--out", "vendor", "--devices", "4"]):
        res = run(cmd, work)
        if res.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{res.stdout}{res.stderr}")


TEE = ["--allow-plain-data", "--trust-root", "vendor/vendor_root.crt", "--device-identity", "vendor/device_{rank}.pem"]


def lab2_fails(binary, work, p):
    res = run(["mpirun", "--oversubscribe", "-np", "4", binary, "train", "--model", "gpt2-tiny", "--data", "data/clinic",
               "--batch", "2", "--seq", "32", "--steps", "2", "--threads", "1", "--no-progress", "--seed",
               str(p["seed"]), "--tee", p["lab2_tee"], "--adversary", p["lab2_attack"], *TEE], work)
    got = re.search(r"failed to open \(tag mismatch[^)]*\) at (step [^\n]*?), \d+ bytes", res.stdout + res.stderr)
    if res.returncode != 3 or not got:
        return [f"{p['student']}: lab 2's {p['lab2_attack']} (--tee {p['lab2_tee']}) exited {res.returncode} "
                f"without a tag mismatch:\n{(res.stdout + res.stderr)[-1200:]}"]
    if got.group(1) != p["expect_lab2_context"]:
        return [f"{p['student']}: lab 2's run names\n    {got.group(1)}\n  the teacher's value is\n"
                f"    {p['expect_lab2_context']}"]
    return []


def lab4_fails(binary, work, p):
    summary = os.path.join(work, f"{p['student']}.json")
    res = run(["mpirun", "--oversubscribe", "-np", str(p["lab4_ranks"]), binary, "train", "--model", p["lab4_model"],
               "--data", "data/clinic", "--batch", "1", "--seq", "64", "--steps", "2", "--timing-warmup", "1",
               "--val-batches", "0", "--no-progress", "--compute", "emulate", "--gpu", "h100", "--link", "emulate",
               "--tee", "cc", "--summary", summary, *TEE], work)
    if res.returncode != 0:
        return [f"{p['student']}: lab 4's run exited {res.returncode}:\n{(res.stdout + res.stderr)[-1200:]}"]
    with open(summary, encoding="utf-8") as f:
        seal = json.load(f)["phases"]["seal"]["mean"] * 1e3
    if abs(seal - p["expect_lab4_seal_ms"]) > 0.06:
        return [f"{p['student']}: lab 4's run seals {seal:.2f} ms per step, the teacher's value is "
                f"{p['expect_lab4_seal_ms']} ms"]
    return []


def guides_state(params):
    """The teacher's guides of labs 2 and 4 give two students' expected values: they must be the tool's."""
    guides = os.path.join(REPO, "docs", "labs", "teachers")
    rows = {"02-tampering.md": "| {student} | `{lab2_attack}`, {lab2_tee} | {expect_lab2_context} |",
            "04-cost.md": "| {student} | {lab4_model}, {lab4_ranks} | {expect_lab4_seal_ms} ms |"}
    fails = []
    for guide, row in rows.items():
        with open(os.path.join(guides, guide), encoding="utf-8") as f:
            text = f.read()
        for student in ("alice", "bob"):
            line = row.format(**params[student])
            if line not in text:
                fails.append(f"docs/labs/teachers/{guide} lacks {student}'s values as the tool gives them: {line}")
    return fails


def main():
    binary = os.path.abspath(sys.argv[1])
    fails = []
    params = {s: lab_params(binary, s) for s in STUDENTS}
    if params["alice"] != lab_params(binary, "alice"):
        fails.append("the same ID gave other parameters")
    for a in STUDENTS:
        for b in STUDENTS:
            if a < b and (params[a]["seed"], params[a]["lab2_attack"]) == (params[b]["seed"], params[b]["lab2_attack"]):
                fails.append(f"{a} and {b} got the same seed and attack")
    with tempfile.TemporaryDirectory() as work:
        prepare(binary, work)
        for p in params.values():
            fails += lab2_fails(binary, work, p) + lab4_fails(binary, work, p)
            print(f"{p['student']}: {p['lab2_attack']} (--tee {p['lab2_tee']}) -> {p['expect_lab2_context']}; "
                  f"{p['lab4_model']} on {p['lab4_ranks']} ranks seals {p['expect_lab4_seal_ms']} ms")
    fails += guides_state(params)
    for f in fails:
        print(f"FAIL: {f}")
    print("lab params: ok" if not fails else f"lab params: {len(fails)} problem(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
