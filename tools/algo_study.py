"""The collectives study: what the all-reduce algorithm alone does to cc's overhead, as the ranks and the
per-message cost grow. Used by tools/reproduce.py (its "Collectives" section, `--only algorithms`).

Lee et al. (arXiv 2501.11771) end with "the need for TEE-aware communication designs beyond parameter
tuning". Under H100 CC every ring hop pays a fixed cost (two bounce-buffer crossings) on top of its
bytes, and the ring sends 2(P-1) sealed messages per bucket; recursive halving-doubling (rhd) sends
2 log2 P with the same bytes, recursive doubling (rd) log2 P with more bytes, and `auto` picks per
bucket by a cost model that knows the TEE's costs (engine/gradients/allreduce_selection.h). Every run here is
the emulated platform in virtual time (docs/design.md §11): numbers of the modelled platform, the same
on any machine.

Two sweeps, cc beside TEE off: the ranks (2 .. 16) at the independent per-crossing cost of the hardware
(ISPASS 2025) and at the high end of the cost sweep; and the per-crossing cost, from the hardware's up
to about what the paper's own pair of figures implies (7.7 ms at GPT-2-XL: docs/reproducing.md), at
one P.
"""
import os

import study_runs

MODEL = "gpt2"
RANKS = (2, 4, 8, 16)
SWEEP_P = 8
ALGOS = ("ring", "rhd", "auto")
COLOURS = {"ring": "C0", "rhd": "C1", "auto": "C2"}
# Per-crossing costs of the sweep beyond the hardware's, in us; the last is the P sweep's high end.
COSTS_US = (250.0, 1000.0, 2000.0, 4000.0, 8000.0)
# A difference of step times smaller than this is "the same" (virtual time is exact; this only keeps
# sub-percent differences of the crossings' order from being called a change of algorithm).
SAME = 0.02


def spec(model, P, variant, cost_us, algo):
    tee = ["--tee", variant]
    if variant != "off":
        tee += ["--cc-transfer-us", f"{cost_us:g}", "--allreduce-algo", algo]
    rid = f"algo-{model}-P{P}-off" if variant == "off" else f"algo-{model}-P{P}-{variant}-{algo}-x{cost_us:g}us"
    return dict(id=rid, groups={"algorithms"}, model=model, P=P, variant=variant, tee_args=tee, bucket=25,
                overlap="on", emulate=True, batch=None, algo=algo if variant != "off" else None,
                cost_us=cost_us if variant != "off" else None)


def specs(hardware_us, model=MODEL, ranks=RANKS, costs_us=COSTS_US, sweep_p=SWEEP_P):
    """Every run of the study: TEE off per P, the P sweep at the hardware's and the highest cost, the
    cost sweep at sweep_p (each run once)."""
    out, seen = [], set()

    def add(r):
        if r["id"] not in seen:
            seen.add(r["id"])
            out.append(r)

    for P in ranks:
        add(spec(model, P, "off", None, None))
        for cost in (hardware_us, costs_us[-1]):
            for a in ALGOS:
                add(spec(model, P, "cc", cost, a))
    for cost in (hardware_us,) + tuple(costs_us):
        for a in ALGOS:
            add(spec(model, sweep_p, "cc", cost, a))
    return out


def load_results(out, runs):
    """{"off": {P: step}, "cc": {(P, cost, algo): (step, auto's picks {algo: buckets})}}."""
    res = {"off": {}, "cc": {}}
    for r, s in study_runs.summaries(out, runs):
        if r["variant"] == "off":
            res["off"][r["P"]] = s["step_s_mean"]
        else:
            picks = {k: v for k, v in s.get("allreduce_selection", {}).get("counts", {}).items() if v}
            res["cc"][(r["P"], r["cost_us"], r["algo"])] = (s["step_s_mean"], picks)
    return res


def cost_text(us):
    """35.2 us, 0.25 ms, 8 ms."""
    return f"{us:g} us" if us < 100 else f"{us / 1e3:g} ms"


def picks_text(picks):
    return ", ".join(f"{a} {n}" for a, n in sorted(picks.items())) or "-"


def leaves_ring(res, P, cost):
    """Whether another algorithm beats the ring by more than SAME at (P, cost): the ring's 2(P-1) sealed
    messages are no longer the right choice there."""
    cc = res["cc"]
    ring = cc.get((P, cost, "ring"))
    best = min((cc[(P, cost, a)][0] for a in ALGOS if a != "ring" and (P, cost, a) in cc), default=None)
    return ring is not None and best is not None and best < ring[0] * (1 - SAME)


def removed(res, P, cost):
    """Share of cc's overhead over TEE off that auto removes against the ring, at (P, cost)."""
    off, cc = res["off"].get(P), res["cc"]
    ring, auto = cc.get((P, cost, "ring")), cc.get((P, cost, "auto"))
    if off is None or ring is None or auto is None or ring[0] <= off:
        return None
    return (ring[0] - auto[0]) / (ring[0] - off)


def rows_for(res, points):
    """Table rows for (P, cost) points: slowdowns of each algorithm, auto's picks, the share removed."""
    rows = []
    for P, cost in points:
        off = res["off"].get(P)
        if off is None or not all((P, cost, a) in res["cc"] for a in ALGOS):
            continue
        xs = [f"{res['cc'][(P, cost, a)][0] / off:.2f}x" for a in ALGOS]
        share = removed(res, P, cost)
        rows.append([str(P), cost_text(cost), *xs, picks_text(res["cc"][(P, cost, "auto")][1]),
                     "-" if share is None else f"{100 * share:.0f}%"])
    return rows


def table(rows):
    head = ["P", "per crossing", "ring", "rhd", "auto", "auto's buckets", "cc overhead auto removes"]
    return ("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
            + "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n")


def crossovers(res, ranks, costs, sweep_p):
    """(smallest P at which the ring is left, per cost), (smallest cost at sweep_p)."""
    by_cost = {c: next((P for P in ranks if leaves_ring(res, P, c)), None) for c in costs}
    at_p = next((c for c in sorted(costs) if leaves_ring(res, sweep_p, c)), None)
    return by_cost, at_p


def section(res, hardware_us, model=MODEL, ranks=RANKS, costs_us=COSTS_US, sweep_p=SWEEP_P):
    """The report's "Collectives" section (markdown; "" when no cc run is there)."""
    high = costs_us[-1]
    p_rows = rows_for(res, [(P, c) for c in (hardware_us, high) for P in ranks])
    c_rows = rows_for(res, [(sweep_p, c) for c in (hardware_us,) + tuple(costs_us)])
    if not p_rows and not c_rows:
        return ""
    text = (f"## Collectives under a TEE: ring vs recursive halving-doubling vs auto ({model}, emulated H100, "
            "virtual time)\n\n"
            "cc's step time over TEE off's, per algorithm (`--allreduce-algo`), 25 MiB buckets. `auto` picks ring, "
            "rd or rhd per bucket with the cost model of the run's own platform (engine/gradients/allreduce_selection.h); "
            "its picks are the buckets per algorithm. The hardware's per-crossing cost is independent of the "
            f"paper ({cost_text(hardware_us)}, ISPASS 2025); {cost_text(high)} is about what the paper's 41.6x -> 3.03x "
            "implies (Scenarios).\n\n")
    if p_rows:
        text += "**As the ranks grow**\n\n" + table(p_rows) + "\n"
    if c_rows:
        text += f"**As the per-crossing cost grows** (P = {sweep_p})\n\n" + table(c_rows) + "\n"
    by_cost, at_p = crossovers(res, ranks, (hardware_us,) + tuple(costs_us), sweep_p)
    words = []
    for c in (hardware_us, high):
        P = by_cost.get(c)
        words.append(f"at {cost_text(c)} per crossing " + (f"from P = {P}" if P else f"at no P up to {max(ranks)}"))
    text += ("**Where the ring stops being the right choice** (another algorithm more than "
             f"{100 * SAME:.0f}% faster): " + "; ".join(words) + (
                 f"; at P = {sweep_p} from {cost_text(at_p)} per crossing." if at_p else
                 f"; at P = {sweep_p} at no cost of the sweep."))
    shares = [(c, removed(res, sweep_p, c)) for c in (hardware_us,) + tuple(costs_us)]
    shares = [(c, s) for c, s in shares if s is not None]
    if shares:
        text += (" An algorithm change alone removes " + ", ".join(
            f"{100 * s:.0f}% at {cost_text(c)}" for c, s in shares) + " of cc's overhead"
                 + f" (P = {sweep_p}). The bytes every rank seals are the same for ring and rhd "
                   "(2(P-1)/P of the bucket), so while sealing bytes dominates, no algorithm helps; the "
                   "per-message side of the cost is what rhd's and rd's fewer messages remove.\n")
    return text


def figure(res, out, hardware_us, model=MODEL, ranks=RANKS, costs_us=COSTS_US, sweep_p=SWEEP_P):
    """fig_algorithms.png: slowdown vs P (two costs) and vs the per-crossing cost (at sweep_p). Returns
    the figure's name, or None (no matplotlib, or no runs)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    if not res["cc"]:
        return None
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for cost, ls in ((hardware_us, "-"), (costs_us[-1], "--")):
        for algo in ALGOS:
            pts = [(P, res["cc"][(P, cost, algo)][0] / res["off"][P]) for P in ranks
                   if (P, cost, algo) in res["cc"] and P in res["off"]]
            if pts:
                a1.plot(*zip(*pts), ls, marker="o", color=COLOURS[algo], label=f"{algo}, {cost_text(cost)}")
    a1.set_xscale("log", base=2)
    a1.set_xticks(list(ranks))
    a1.set_xticklabels([str(P) for P in ranks])
    a1.set_xlabel("ranks P")
    a1.set_title(f"cc slowdown vs ranks ({model})")
    costs = (hardware_us,) + tuple(costs_us)
    for algo in ALGOS:
        pts = [(c / 1e3, res["cc"][(sweep_p, c, algo)][0] / res["off"][sweep_p]) for c in costs
               if (sweep_p, c, algo) in res["cc"] and sweep_p in res["off"]]
        if pts:
            a2.plot(*zip(*pts), marker="o", color=COLOURS[algo], label=algo)
    a2.set_xscale("log")
    a2.set_xlabel("cost per bounce-buffer crossing, ms")
    a2.set_title(f"cc slowdown vs per-message cost (P = {sweep_p})")
    for ax in (a1, a2):
        ax.set_ylabel("step time / TEE off")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig_algorithms.png"), dpi=110)
    plt.close(fig)
    return "fig_algorithms"
