#!/usr/bin/env python3
"""Per-student parameters for the labs, so that two students' numbers differ, and the values each
student should get, for the teacher.

Usage: lab_params.py --student ID [--teacher] [--teetrain build/teetrain] [--json]

The parameters are a pure function of the student's ID (a SHA-256 of it): the teacher re-derives
every student's from the list of IDs, no file to hand out. With --teacher it also prints what the
student must find, derived from the code, not from a run:

  lab 2   the attack `flip:N@R` on 4 ranks, and the place the error must name (step, phase, hop,
          chunk, ...), from the ring's message order (tools/figures/make_figures.py ring_messages,
          checked against real runs by the figures' test)
  lab 4   a model and a number of ranks, and cc's `seal` time per step on the modelled host: the
          model's gradient bytes x 2(P-1)/P / 3.36 GB/s (the parameter count read from
          `teetrain models`)
  lab 6   a bucket size for finding 3

Exit 0; 2 on bad usage (one line naming the problem).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # importing make_figures must leave no cache in the repository
sys.path.insert(0, os.path.join(REPO, "tools", "figures"))

# The choices each parameter is drawn from: small enough to run in a lab's time on 2 cores.
LAB2_RANKS = 4
LAB2_TEES = ("cc", "fast")
LAB4_MODELS = ("gpt2", "gpt2-medium")
LAB4_RANKS = (2, 4)
LAB6_BUCKETS_MB = (1, 5, 10, 50)
HOST_AEAD_GBPS = 3.36  # the modelled host's AES-GCM rate (docs/labs/04-cost.md, --host-aead-gbps)


@dataclass(frozen=True)
class Params:
    student: str
    seed: int            # --seed of labs 1 and 2: another batch, other recovered bytes
    lab2_attack: str     # --adversary of lab 2's own attack, on LAB2_RANKS ranks
    lab2_tee: str
    lab4_model: str
    lab4_ranks: int
    lab6_bucket_mb: int


def params(student: str) -> Params:
    h = hashlib.sha256(student.encode("utf-8")).digest()
    per_step = 2 * (LAB2_RANKS - 1)  # ring messages per step and link (one bucket)
    n = 1 + h[1] % (2 * per_step)    # steps 0 and 1
    r = h[2] % LAB2_RANKS
    return Params(student=student, seed=1 + int.from_bytes(h[3:5], "big") % 9999, lab2_attack=f"flip:{n}@{r}",
                  lab2_tee=LAB2_TEES[h[5] % len(LAB2_TEES)], lab4_model=LAB4_MODELS[h[6] % len(LAB4_MODELS)],
                  lab4_ranks=LAB4_RANKS[h[7] % len(LAB4_RANKS)],
                  lab6_bucket_mb=LAB6_BUCKETS_MB[h[8] % len(LAB6_BUCKETS_MB)])


def lab2_context(p: Params) -> str:
    """Where the error of the student's attack must say the flipped message was (MessageContext)."""
    from make_figures import ring_messages
    n, r = (int(x) for x in re.fullmatch(r"flip:(\d+)@(\d+)", p.lab2_attack).groups())
    return ring_messages(LAB2_RANKS, r, n, forward_ag=p.lab2_tee == "fast")[n - 1].text()


def model_params(teetrain: str, model: str) -> int:
    """The model's parameter count, as `teetrain models` lists it."""
    out = subprocess.run([teetrain, "models"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        cols = line.split()
        if cols and cols[0] == model:
            return next(int(c) for c in cols[1:] if c.isdigit() and int(c) > 1000)
    raise SystemExit(f"lab_params.py: `teetrain models` does not list {model}")


def lab4_seal_ms(p: Params, teetrain: str) -> float:
    grads = model_params(teetrain, p.lab4_model) * 4  # float32 gradients
    share = 2 * (p.lab4_ranks - 1) / p.lab4_ranks     # what a rank seals of them per step in the ring
    return grads * share / (HOST_AEAD_GBPS * 1e9) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--student", required=True, help="the student's ID (any text: a login, a number)")
    ap.add_argument("--teacher", action="store_true", help="also print what the student must find")
    ap.add_argument("--teetrain", default=os.path.join(REPO, "build", "teetrain"), help="the binary (--teacher)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = ap.parse_args()
    if not args.student.strip():
        print("lab_params.py: --student is empty: give the student's ID", file=sys.stderr)
        return 2
    p = params(args.student.strip())
    out = asdict(p)
    if args.teacher:
        if not os.access(args.teetrain, os.X_OK):
            print(f"lab_params.py: {args.teetrain}: not an executable (build it, or pass --teetrain)", file=sys.stderr)
            return 2
        out["expect_lab2_context"] = lab2_context(p)
        out["expect_lab4_seal_ms"] = round(lab4_seal_ms(p, args.teetrain), 1)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:22s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
