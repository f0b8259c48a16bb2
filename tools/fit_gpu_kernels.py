#!/usr/bin/env python3
"""Refits the emulated GPU's transformer kernel model (Note [Transformer kernel model], core/emulated/
emulated_gpu.h) to the measured H200 steps, and prints the constants and the per-family table.

`teetrain bench emulated-step` costs each fixture's step op by op and reports, per pass, the seconds of
each kind of work and the kernel launches (forward_work, backward_work) with the constants it used.
Every transformer term is linear in one constant: launches x the cost per launch, projection and
attention GEMM FLOPs / peak x 1/efficiency, row-wise and (T, T) scores bytes / (0.8 HBM) x their
traffic. So the fit is a linear least-squares fit of the forward and backward passes' relative error
over the fit set (non-negative, by dropping a term that would go negative), and the held-out steps are
predicted with the same terms. The fit set is validate_emulator.py's: the GPT-2 size sweep at 4 x 1024
and GPT-2 (124M) at every shape of the token sweep, TF32 and FP32, on the H200; everything else is held
out. The optimizer and the element-wise ops outside the transformer's (priced as for ResNet) are not
fitted.

Only the standard library. Usage: tools/fit_gpu_kernels.py [--bin build/teetrain] [--fixtures GLOBS]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_emulator as ve  # noqa: E402  (the fixtures, their sets and families, one implementation)

# The fitted terms: (name in the printout, work kind in the JSON, constant it scales with, how the
# constant enters the seconds: "times" (seconds = feature x constant) or "over" (feature / constant)).
TERMS = (("launch_s", "launches_s", "launch_s", "times"),
         ("efficiency", "matmul_s", "efficiency", "over"),
         ("attention_efficiency", "attention_s", "attention_efficiency", "over"),
         ("row_traffic", "rows_s", "row_traffic", "times"),
         ("scores_traffic", "scores_s", "scores_traffic", "times"))
FIXED = ("conv_s", "elementwise_s", "optimizer_s", "transfer_s")  # priced as they are, not fitted
PASSES = ("forward", "backward")


def features(emu, p):
    """A pass's terms at unit constants (x = the coefficient each multiplies) and its fixed seconds."""
    w, c = emu[p + "_work"], emu["constants"]
    f = [w[k] / c[const] if how == "times" else w[k] * c[const] for _, k, const, how in TERMS]
    return f, sum(w[k] for k in FIXED)


def solve(a, b):
    """Solves the square system a x = b by Gaussian elimination with partial pivoting."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for i in range(n):
        piv = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[piv] = m[piv], m[i]
        for r in range(n):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fit(samples, free):
    """Least squares of the relative error over samples (features, fixed, measured), in the terms `free`
    (indices); a term whose coefficient comes out negative is dropped and the rest refitted."""
    while True:
        ata = [[sum(f[i] * f[j] / y / y for f, _, y in samples) for j in free] for i in free]
        atb = [sum(f[i] * (y - c) / y / y for f, c, y in samples) for i in free]
        x = solve(ata, atb)
        if all(v >= 0 for v in x):
            coef = [0.0] * len(TERMS)
            for i, v in zip(free, x):
                coef[i] = v
            return coef
        free = [i for i, v in zip(free, x) if v >= 0]


def predict(coef, f, c):
    return c + sum(k * v for k, v in zip(coef, f))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/teetrain", help="the teetrain binary")
    ap.add_argument("--fixtures", default="tests/fixtures/gpu_size_sweep_h200/*.json,"
                    "tests/fixtures/gpu_token_sweep_h200/*/*.json,tests/fixtures/step_h200_heldout/*.json,"
                    "tests/fixtures/step_h100/*.json", help="comma-separated globs of `bench step --json` files")
    args = ap.parse_args()
    args.fixture = []
    if not os.path.exists(args.bin):
        sys.exit(f"fit_gpu_kernels: {args.bin} not found; build it first (scripts/build.sh release)")
    steps = []
    for m in ve.fixtures_of(args):
        if ve.family_of(m["model"]) == "resnet":
            continue  # no transformer terms: the convolution model is fitted apart
        emu = ve.emulated_step(args.bin, m)
        steps.append((m, emu, {p: features(emu, p) for p in PASSES}))
    samples = [(*s[2][p], s[0][p + "_s"]) for s in steps if s[0]["set"] == "fit" for p in PASSES]
    if len(samples) < len(TERMS):
        sys.exit(f"fit_gpu_kernels: --fixtures {args.fixtures}: {len(samples)} fitted passes for {len(TERMS)} "
                 "constants; give more of the fit set (validate_emulator.py's LEGACY_SETS)")
    coef = fit(samples, list(range(len(TERMS))))
    print("Fitted on", len(samples), "passes of", len(samples) // 2, "steps:")
    for (name, _, _, how), k in zip(TERMS, coef):
        value = k if how == "times" else (1 / k if k else float("inf"))
        print(f"  {name} = {value:.4g}" + (" (term dropped: negative)" if not k else ""))
    rows = []
    for m, emu, feats in steps:
        pred = {p: predict(coef, *feats[p]) for p in PASSES}
        step = pred["forward"] + pred["backward"] + emu["optimizer_s"]
        meas = m["forward_s"] + m["backward_s"] + m["optimizer_s"]
        rows.append(dict(part="b", set=m["set"], family=m["family"], error=step / meas - 1,
                         **{p + "_error": pred[p] / m[p + "_s"] - 1 for p in PASSES},
                         what=f"{m['model']} {m['precision']} on {m['gpu']} ({m['source']}, {m['batch']} x {m['shape']})"))
    print("\n| set | step | error | forward | backward |\n| --- | --- | --- | --- | --- |")
    for r in sorted(rows, key=lambda r: (r["set"], r["family"], r["what"])):
        print(f"| {r['set'].replace('_', '-')} | {r['what']} | {r['error']:+.1%} | {r['forward_error']:+.1%} | "
              f"{r['backward_error']:+.1%} |")
    print("\n".join(ve.family_table(rows)))
    held = [abs(r["error"]) for r in rows if r["set"] == "held_out"]
    if held:
        print(f"\nheld out: {len(held)} steps, mean {statistics.mean(held):.1%}, max {max(held):.1%}")


if __name__ == "__main__":
    main()
