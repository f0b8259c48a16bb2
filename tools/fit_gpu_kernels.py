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

--launch-model asks whether the launches add up (the model the emulator uses) or overlap with the work,
replaying each pass's kernel groups (`bench emulated-step --kernel-groups`: each op's launches with the
work charged with them) at a host launch interval L and a per-kernel cost l on the GPU:
  additive     every kernel costs launch_s on top of its work (linear: the fit above);
  per-op-max   an op of k kernels and work W costs max(k L, k l + W): an op of tiny kernels is paced by
               the host's launches, a large one by the GPU;
  queue        the host launches every kernel L after the last, and the GPU starts each when it is
               launched and the one before it has ended, taking l plus its share of its op's work: the
               host runs ahead during long kernels, as it does ahead of a real launch queue.
The last two are not linear in their constants; they are fitted by Nelder-Mead on the same relative
errors, from the additive fit (which of them the data support: docs/reproducing.md, "The transformer
kernel model").

Only the standard library. Usage: tools/fit_gpu_kernels.py [--bin build/teetrain] [--fixtures GLOBS]
[--launch-model additive|per-op-max|queue]
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
FIXED = ("conv_s", "elementwise_s", "optimizer_s", "transfer_s", "fused_attention_s")  # priced as they are, not fitted
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


# Columns of `bench emulated-step --kernel-groups`, and each fitted kind's constant (TERMS' order, after
# the launches): a group's seconds of that kind at unit constants are its seconds rescaled as features() does.
GROUP_KINDS = (("matmul_s", "efficiency", "over"), ("attention_s", "attention_efficiency", "over"),
               ("rows_s", "row_traffic", "times"), ("scores_s", "scores_traffic", "times"))


def groups_of(emu, p):
    """A pass's kernel groups as (kernels, the four fitted kinds' seconds at unit constants, fixed seconds)."""
    kg, c = emu["kernel_groups"], emu["constants"]
    col = {name: i for i, name in enumerate(kg["columns"])}
    out = []
    for g in kg[p]:
        unit = [g[col[k]] / c[const] if how == "times" else g[col[k]] * c[const] for k, const, how in GROUP_KINDS]
        out.append((g[0], unit, sum(g[col[k]] for k in FIXED)))
    return out


def per_op_max(host, gpu_l, ops):
    """Each op of k kernels and work w: paced by its launches or by the GPU, whichever is slower."""
    return sum(max(k * host, k * gpu_l + w) if k else w for k, w in ops)


def launch_queue(host, gpu_l, ops):
    """The host launches a kernel every `host` seconds; the GPU starts each once it is launched and the one
    before has ended, and takes gpu_l plus its share of its op's work. A plain op (k = 0: the optimizer, a
    copy) is its work alone, in turn on the GPU."""
    h = q = 0.0
    for k, w in ops:
        if k == 0:
            q = max(h, q) + w
            continue
        c = gpu_l + w / k  # the first kernel starts at launch, the rest follow the slower of the two sides
        q = max(q + k * c, h + host + k * c, h + k * host + c)
        h += k * host
    return q


LAUNCH_MODELS = {"per-op-max": per_op_max, "queue": launch_queue}


def replay(model, x, groups):
    """Seconds of one pass under a launch model; x = (host launch interval L, kernel cost l, the four
    fitted kinds' constants as TERMS scales them)."""
    ops = [(k, fixed + sum(a * b for a, b in zip(x[2:], unit))) for k, unit, fixed in groups]
    return LAUNCH_MODELS[model](x[0], x[1], ops)


def nelder_mead(f, x0, steps, iters=1500):
    """Minimises f from x0 (simplex edges `steps`); returns (x, f(x))."""
    pts = [list(x0)] + [[v + (steps[i] if i == j else 0) for j, v in enumerate(x0)] for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(len(pts)), key=vals.__getitem__)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        centre = [sum(p[j] for p in pts[:-1]) / (len(pts) - 1) for j in range(len(x0))]
        def towards(a):
            return [c + a * (w - c) for c, w in zip(centre, pts[-1])]
        r = towards(-1)
        fr = f(r)
        if fr < vals[0]:
            e = towards(-2)
            fe = f(e)
            pts[-1], vals[-1] = (e, fe) if fe < fr else (r, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = r, fr
        else:
            ct = towards(0.5)
            fc = f(ct)
            if fc < vals[-1]:
                pts[-1], vals[-1] = ct, fc
            else:  # shrink towards the best
                pts = [pts[0]] + [[b + 0.5 * (v - b) for b, v in zip(pts[0], p)] for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
        if max(vals) - min(vals) < 1e-12:
            break
    best = min(range(len(pts)), key=vals.__getitem__)
    return pts[best], vals[best]


def fit_launch_model(model, coef, steps):
    """Fits (L, l, the four kinds' constants) of a nonlinear launch model to the fit set's passes, from the
    additive fit `coef`: returns the constants as replay() takes them."""
    fit_passes = [(g[p], s[0][p + "_s"]) for s, g in steps if s[0]["set"] == "fit" for p in PASSES]
    def loss(z):
        x = [abs(v) for v in z]
        return sum((replay(model, x, g) / y - 1) ** 2 for g, y in fit_passes)
    launch = coef[0] or 1e-5
    best = None
    for x0 in ([launch, launch, *coef[1:]], [1.5 * launch, 0.3 * launch, *coef[1:]]):
        x, v = nelder_mead(loss, x0, [0.2 * abs(a) or 1e-6 for a in x0])
        if best is None or v < best[1]:
            best = ([abs(a) for a in x], v)
    return best[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/teetrain", help="the teetrain binary")
    ap.add_argument("--fixtures", default="tests/fixtures/gpu_size_sweep_h200/*.json,"
                    "tests/fixtures/gpu_token_sweep_h200/*/*.json,tests/fixtures/step_h200_heldout/*.json,"
                    "tests/fixtures/step_h100/*.json", help="comma-separated globs of `bench step --json` files")
    ap.add_argument("--launch-model", choices=("additive", *LAUNCH_MODELS), default="additive",
                    help="how the kernels' launches combine with their work (above; the emulator's is additive)")
    args = ap.parse_args()
    queue = args.launch_model != "additive"
    args.fixture = []
    if not os.path.exists(args.bin):
        sys.exit(f"fit_gpu_kernels: {args.bin} not found; build it first (scripts/build.sh release)")
    steps = []
    for m in ve.fixtures_of(args):
        if ve.family_of(m["model"]) == "resnet":
            continue  # no transformer terms: the convolution model is fitted apart
        emu = ve.emulated_step(args.bin, m, kernel_groups=queue)
        steps.append((m, emu, {p: features(emu, p) for p in PASSES}))
    groups = [{p: groups_of(emu, p) for p in PASSES} if queue else None for _, emu, _ in steps]
    samples = [(*s[2][p], s[0][p + "_s"]) for s in steps if s[0]["set"] == "fit" for p in PASSES]
    if len(samples) < len(TERMS):
        sys.exit(f"fit_gpu_kernels: --fixtures {args.fixtures}: {len(samples)} fitted passes for {len(TERMS)} "
                 "constants; give more of the fit set (validate_emulator.py's LEGACY_SETS)")
    coef = fit(samples, list(range(len(TERMS))))
    print("Fitted on", len(samples), "passes of", len(samples) // 2, "steps:")
    for (name, _, _, how), k in zip(TERMS, coef):
        value = k if how == "times" else (1 / k if k else float("inf"))
        print(f"  {name} = {value:.4g}" + (" (term dropped: negative)" if not k else ""))
    if queue:
        x = fit_launch_model(args.launch_model, coef, [(s, g) for s, g in zip(steps, groups)])
        print(f"Launch model {args.launch_model}, fitted from it (Nelder-Mead):")
        print(f"  host_launch_s = {x[0]:.4g}\n  kernel_s = {x[1]:.4g}")
        for (name, _, _, how), k in zip(TERMS[1:], x[2:]):
            print(f"  {name} = {(k if how == 'times' else (1 / k if k else float('inf'))):.4g}")
    rows = []
    for (m, emu, feats), g in zip(steps, groups):
        pred = {p: replay(args.launch_model, x, g[p]) if queue else predict(coef, *feats[p]) for p in PASSES}
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
