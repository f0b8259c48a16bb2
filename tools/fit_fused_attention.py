#!/usr/bin/env python3
"""Fit the emulated GPU's fused-attention efficiency (Note [Fused attention baseline],
core/emulated/emulated_gpu.h) to PyTorch's measured GPT-2 steps, and report the held-out ones.

PyTorch's eager step materialises attention as teetrain's kernels do; its fused step
(scaled_dot_product_attention) is the same step with attention in one kernel. So what the fused step
saves over the eager one, measured, is what `--gpu-baseline fused-attention` must save over teetrain's
emulated step: the emulated materialised attention less the fused kernel's time. The fused kernel is
priced at F / e seconds (F: its FLOPs at the full peak, e: the efficiency), so the saving is linear in
x = 1 / e:

    saving(x) = (teetrain step - fused step at e = 1) + F - F x

and x is the least-squares fit over the fixture's "fit" rows (the H200's), in closed form. Each row then
prints the measured saving beside the predicted one, and the fused step beside PyTorch's.

    /usr/bin/python3 tools/fit_fused_attention.py                 # prints the fit and the table
    /usr/bin/python3 tools/fit_fused_attention.py --check         # exit 1 unless the emulator's constant is the fit's

Deterministic: the emulated steps are costed, not timed (`teetrain bench emulated-step`).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIXTURE = "tests/fixtures/pytorch_attention_gpu/gpt2-8x1024.json"


def fail(msg):
    print(f"fit_fused_attention: {msg}", file=sys.stderr)
    sys.exit(2)


def emulated(binary, fx, row, extra):
    """One `bench emulated-step` of the fixture's configuration: its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "step.json")
        cmd = [binary, "bench", "emulated-step", "--model", fx["model"], "--batch", str(fx["batch"]),
               "--seq", str(fx["seq"]), "--gpu", row["gpu"], "--gpu-precision", row["precision"],
               "--json", out, *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
        with open(out) as f:
            return json.load(f)


def fused_seconds(step):
    return step["forward_work"]["fused_attention_s"] + step["backward_work"]["fused_attention_s"]


def read_fixture(path):
    try:
        with open(path) as f:
            fx = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: not a readable JSON fixture ({e})")
    if fx.get("format") != "teetrain-pytorch-attention/1" or not fx.get("rows"):
        fail(f"{path}: not a teetrain-pytorch-attention/1 fixture with rows")
    return fx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/teetrain", help="the teetrain binary")
    ap.add_argument("--fixture", default=FIXTURE, help="PyTorch's eager and fused steps")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the emulator's constant equals the fit (to 3 decimals)")
    args = ap.parse_args()
    fx = read_fixture(args.fixture)
    rows = []
    for row in fx["rows"]:
        ours = emulated(args.bin, fx, row, [])
        unit = emulated(args.bin, fx, row, ["--gpu-baseline", "fused-attention", "--gpu-fused-efficiency", "1"])
        F = fused_seconds(unit)
        rows.append(dict(row, ours=ours["step_s"], A=ours["step_s"] - unit["step_s"] + F, F=F,
                         measured_saving=row["eager_s"] - row["sdpa_s"]))
    fit = [r for r in rows if r["set"] == "fit"]
    if not fit:
        fail(f"{args.fixture}: no row with \"set\": \"fit\"")
    x = sum(r["F"] * (r["A"] - r["measured_saving"]) for r in fit) / sum(r["F"] ** 2 for r in fit)
    eff = 1 / x
    table = ["| GPU, precision | set | PyTorch eager - fused, measured | predicted | error | PyTorch fused step | "
             "emulated fused-attention step | error |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        saving = r["A"] - r["F"] * x
        step = r["ours"] - saving
        table.append(f"| {r['gpu']} {r['precision']} | {r['set']} | {r['measured_saving'] * 1e3:.1f} ms | "
                     f"{saving * 1e3:.1f} ms | {saving / r['measured_saving'] - 1:+.1%} | {r['sdpa_s'] * 1e3:.1f} ms | "
                     f"{step * 1e3:.1f} ms | {step / r['sdpa_s'] - 1:+.1%} |")
    print(f"fused attention efficiency (fraction of the FP32 peak): {eff:.3f}, fitted to {len(fit)} of "
          f"{len(rows)} rows of {args.fixture}")
    print("\n".join(table))
    table_eff = emulated(args.bin, fx, fx["rows"][0], ["--gpu-baseline", "fused-attention"])["constants"][
        "fused_attention_efficiency"]
    print(f"the emulator's constant (kMeasuredFusedAttentionEfficiency): {table_eff:.3f}")
    if args.check and abs(table_eff - eff) > 5e-4:  # the constant is the fit to three decimals
        print(f"fit_fused_attention: the emulator's {table_eff:.3f} is not the fit's {eff:.3f}: set "
              f"kMeasuredFusedAttentionEfficiency (core/emulated/emulated_gpu.h) to {eff:.3f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
