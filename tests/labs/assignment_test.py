#!/usr/bin/env python3
"""Assignment 7's autograder (tools/labs/grade_padding.py) fails the starter and passes the reference.

Usage: assignment_test.py TEETRAIN_BINARY

The starter (tools/labs/assignment/padding.py) pads nothing: `hidden` must fail on the message that
tells the models apart. The reference (docs/labs/teachers/solutions/padding.py) must pass all three
checks. Two more policies show the other checks can fail: one that pads everything to 1 MiB hides the
models at many times the least cost (`cost` fails), one that truncates is refused (`valid` fails).
All four are graded from the same captures (one sealed run per model).
"""
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRADER = os.path.join(REPO, "tools", "labs", "grade_padding.py")
STARTER = os.path.join(REPO, "tools", "labs", "assignment", "padding.py")
REFERENCE = os.path.join(REPO, "docs", "labs", "teachers", "solutions", "padding.py")
SET = "ANONYMITY_SET = {'gpt2-tiny': 34688, 'bert-tiny': 36161}\n"
WASTEFUL = SET + "def padded_size(kind, payload_bytes, world):\n    return max(payload_bytes, 1 << 20)\n"
TRUNCATING = SET + "def padded_size(kind, payload_bytes, world):\n    return min(payload_bytes, 65536)\n"


def grade(binary, policy, captures):
    res = subprocess.run([sys.executable, GRADER, policy, "--teetrain", binary, "--captures", captures],
                         capture_output=True, text=True, timeout=240)
    return res.returncode, res.stdout + res.stderr


def main():
    binary = sys.argv[1]
    errors = []
    with tempfile.TemporaryDirectory() as work:
        captures = os.path.join(work, "captures")
        policies = {"starter": STARTER, "reference": REFERENCE}
        for name, text in (("wasteful", WASTEFUL), ("truncating", TRUNCATING)):
            policies[name] = os.path.join(work, f"{name}.py")
            with open(policies[name], "w", encoding="utf-8") as f:
                f.write(text)
        expected = {  # policy: (exit status, lines its report must hold)
            "starter": (1, ["hidden FAIL  link 0->1, message 1 (broadcast): gpt2-tiny 138752 bytes, bert-tiny "
                            "144644 bytes", "grade: 2/3 checks passed"]),
            "reference": (0, ["valid  PASS", "hidden PASS", "cost   PASS", "grade: 3/3 checks passed"]),
            "wasteful": (1, ["hidden PASS", "cost   FAIL"]),
            "truncating": (1, ["valid  FAIL  padded_size('broadcast', 138752, 2) = 65536", "grade: 0/3"]),
        }
        for name, (code, lines) in expected.items():
            got_code, out = grade(binary, policies[name], captures)
            missing = [line for line in lines if line not in out]
            if got_code != code or missing:
                errors.append(f"the {name} policy: exit {got_code} (expected {code}), missing {missing}:\n{out}")
    if os.path.exists(os.path.join(os.path.dirname(STARTER), "__pycache__")):
        errors.append("grading left a __pycache__ beside the starter")
    for e in errors:
        print(f"FAIL: {e}")
    print("assignment autograder:", "FAILED" if errors else "starter fails, reference passes, each check can fail")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
