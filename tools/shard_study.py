"""The sharding study: DDP against ZeRO-1, ZeRO-2 and ZeRO-3 (`teetrain train --shard
none|optimizer|gradients|params`) under a TEE, on emulated H100s in virtual time. Used by tools/reproduce.py (its "Sharding" section,
`--only sharding`).

ZeRO-1 and ZeRO-2 move the same bytes as DDP's ring all-reduce (a reduce-scatter per bucket, then an
all-gather of the updated parameters), but the all-gather leaves backward's shadow: it runs after the
optimizer, exposed, where DDP's all-gather half overlaps backward. Under confidential computing each
message also pays per crossing (H100 CC's bounce buffers), so whether sharding costs more or less than
DDP under `cc` is measured here, not assumed. ZeRO-3 moves about 1.5x the bytes (each block's
parameters gathered for its forward and again for its backward, beside the gradients' reduce-scatter)
in about 1.5x the messages, the forward's gathers prefetched behind the block before. Every run is the emulated platform in virtual time
(docs/design.md §11): the numbers of the modelled platform, the same on any machine.

Per model, P, TEE mode and stage: the step time, its slowdown over the same stage with TEE off, the
messages the gradient collectives sealed per step (summary counter ring_sealed: reduce-scatters,
all-gathers, ZeRO-3's block gathers, the gradient norm's parts) and every byte rank 0 sealed per step (bytes_sealed: those
messages and the batches' ingress). A (model, P, stage) whose rank does not fit the emulated GPU's
memory (`teetrain models --ranks P --shard S --batch B --seq T`, the check `teetrain train` applies) is
not run, and the section says so with its size.

The bucket sweep (one model and P, off and cc, DDP, ZeRO-1 and ZeRO-3, BUCKETS MiB; ZeRO-2 moves and seals
what ZeRO-1 does) is the unit-size sweep, as every collective goes bucket by bucket (ZeRO-3's gathers too:
a block is gathered bucket by bucket, Note [ZeRO-3 units follow the buckets]): it separates cc's overhead over off into a part per
message sealed and a part per byte sealed (least squares over the sweep), and the crossover, the
message size at which the two parts are equal, says whether a message costs mostly its crossings or
its bytes.

Under the named scenarios (tools/scenarios.py; SCENARIOS, reproduce.py --shard-scenarios) the cc rows of
DDP, ZeRO-1 and ZeRO-3 run again with each scenario's flags (scenarios.tee_args), beside the grid's TEE-off
runs: "hardware" is the grid's own, paper-fit's per-crossing cost is derived from the paper's results and
labelled so wherever it prints. A table per scenario says whether ZeRO-3 costs more than DDP under it and
whether its step follows its bytes or its messages.
"""
import os
import re
import subprocess

import scenarios
import study_runs

MODELS = ("gpt2-xl", "llama-3.2-1b", "llama-3-8b")
RANKS = (8, 16)  # --shard-ranks 8,16,64,1024 adds folded rings of P = 64 and 1,024 (FOLD_RANKS)
BUCKETS = (5, 25, 100)  # MiB, the sweep's bucket (unit) sizes
SWEEP_BUCKET = 25  # the bucket of the grid, and of the sweep's middle point
SWEEP = "gpt2-xl:16"  # MODEL:P of the bucket sweep (reproduce.py --shard-sweep)
SWEEP_STAGES = ("none", "optimizer", "params")
# Sequences per GPU where the grid's 4 x 1024 leaves no trainable stage inside an H100's 80 GiB:
# llama-3-8b's activations of 4 x 1024 tokens are 55.6 GiB, beside its parameters' 29.9.
MODEL_BATCH = {"llama-3-8b": 1}
MODES = ("off", "cc", "fast")
STAGES = ("none", "optimizer", "gradients", "params")
STAGE_NAMES = {"none": "DDP", "optimizer": "ZeRO-1", "gradients": "ZeRO-2", "params": "ZeRO-3"}
# Ranks beyond MAX_RANKS_PER_PROCESS run as a folded ring (`--model-ranks P`, docs/reproducing.md, "Folded
# ring") of FOLD_RANKS virtual ranks in one process, where P is a multiple of it: the whole ring's step,
# every stage (Note [Sharded fold]). A fold's all-gathers go hop by hop (a forwarded one cannot fold), so
# fast, whose all-gather forwards, is not run there. Other P run as P / MAX_RANKS_PER_PROCESS processes.
MAX_RANKS_PER_PROCESS = 32
FOLD_RANKS = 8


def folds(P):
    return P > MAX_RANKS_PER_PROCESS and P % FOLD_RANKS == 0
# The CC hardware of the cc and fast runs: H100 CC as ISPASS 2025 measured it (tools/scenarios.py's lead,
# the "hardware" scenario, whose flags the grid's cc and fast runs take).
CC_HARDWARE = scenarios.CC_HARDWARE
# The named scenarios (tools/scenarios.py) the grid's cc rows of DDP, ZeRO-1 and ZeRO-3 run under
# (--shard-scenarios): "hardware" is the grid's own cc runs; the others are runs of their own, on the
# grid's TEE-off runs (scenarios that change cc's costs alone: scenarios.changes_cc_only).
SCENARIOS = ("hardware", "paper-fit")
SCENARIO_STAGES = ("none", "optimizer", "params")  # ZeRO-2 seals and moves what ZeRO-1 does


def spec(model, P, mode, stage, hardware_us, bucket=SWEEP_BUCKET, scenario="hardware", toll_us=None):
    """One run. A scenario other than "hardware" is a cc run under that scenario's flags (toll_us: paper-fit's
    per-crossing cost), its id tagged with the scenario's name."""
    tee = ["--tee", "off"] if mode == "off" else scenarios.tee_args(scenario, mode, hardware_us, toll_us)
    tag = ("" if bucket == SWEEP_BUCKET else f"-b{bucket:g}") + ("" if scenario == "hardware" else f"-{scenario}")
    return dict(id=f"shard-{model}-P{P}-{mode}-{stage}{tag}", groups={"sharding"}, model=model, P=P,
                variant=mode, tee_args=tee[:2] + ["--shard", stage] + tee[2:], bucket=bucket, overlap="on",
                emulate=True, batch=MODEL_BATCH.get(model), stage=stage, scenario=scenario,
                **(dict(ranks_run=FOLD_RANKS, model_ranks=P) if folds(P) else
                   dict(processes=max(1, -(-P // MAX_RANKS_PER_PROCESS)))))


def scenario_specs(hardware_us, toll_us, names, models=MODELS, ranks=RANKS, fits=None):
    """The cc runs of DDP, ZeRO-1 and ZeRO-3 under each named scenario but "hardware" (the grid's), at
    every (model, P) where DDP and ZeRO-3 fit; paper-fit only with its toll_us."""
    return [spec(m, P, "cc", st, hardware_us, scenario=n, toll_us=toll_us)
            for n in names if n != "hardware" and (toll_us is not None or not is_derived(n))
            for m in models for P in ranks
            if fits is None or (fits(m, P, "none") and fits(m, P, "params"))
            for st in SCENARIO_STAGES if fits is None or fits(m, P, st)]


def is_derived(name):
    return next(derived for n, _, derived, *_ in scenarios.SCENARIOS if n == name)


def rank_memory(binary, model, P, stage, batch, seq):
    """(GiB per rank, whether the emulated h100 holds it), from `teetrain models`: the numbers the run's
    own check (exit 2) uses."""
    out = subprocess.run([binary, "models", "--model", model, "--ranks", str(P), "--shard", stage,
                          "--batch", str(batch), "--seq", str(seq)], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        got = re.search(r"([0-9.]+) GiB\s+(yes|no|-)\s", line + " ")
        if line.split()[:1] == [model] and got:
            return float(got.group(1)), got.group(2) != "no"
    raise RuntimeError(f"teetrain models printed no row for {model}")


def specs(hardware_us, models=MODELS, ranks=RANKS, fits=None, sweep=None, buckets=BUCKETS):
    """Every run of the study, each made once (virtual time): those `fits(model, P, stage)` allows (every
    one without it), and the bucket sweep at sweep = (model, P) when given (the grid's bucket reuses the
    grid's runs)."""
    grid = [spec(m, P, mode, stage, hardware_us) for m in models for P in ranks for mode in MODES
            if mode != "fast" or not folds(P) for stage in STAGES if fits is None or fits(m, P, stage)]
    if sweep is not None:
        m, P = sweep
        grid += [spec(m, P, mode, stage, hardware_us, b) for b in buckets
                 if b != SWEEP_BUCKET or m not in models or P not in ranks
                 for mode in ("off", "cc") for stage in SWEEP_STAGES if fits is None or fits(m, P, stage)]
    return grid


def per_step(summary, counter):
    """A counter of rank 0 per step: the summaries count every step of the run, warm-up included."""
    v = summary.get("counters", {}).get(counter, 0)
    v = v[0] if isinstance(v, list) else v
    steps = summary.get("steps") or 1
    return v / steps


def load_results(out, runs):
    """{(model, P, mode, stage): (step_s, collective messages sealed per step, bytes sealed per step)} of
    the grid's bucket, and {(model, P, mode, stage, bucket): the same} of every run (the sweep's too)."""
    every = {(r["model"], r["P"], r["variant"], r["stage"], r["bucket"]):
             (s["step_s_mean"], per_step(s, "ring_sealed"), per_step(s, "bytes_sealed"))
             for r, s in study_runs.summaries(out, runs) if r["scenario"] == "hardware"}
    grid = {k[:4]: v for k, v in every.items() if k[4] == SWEEP_BUCKET}
    return grid, every


def load_scenarios(out, runs, grid, names):
    """{scenario: {(model, P, mode, stage): (step_s, messages, bytes sealed per step)}}: the grid's own
    runs under "hardware", every other scenario's cc runs beside the grid's TEE-off runs."""
    res = {n: ({k: v for k, v in grid.items() if k[2] in ("off", "cc")} if n == "hardware" else
               {k: v for k, v in grid.items() if k[2] == "off"}) for n in names}
    for r, s in study_runs.summaries(out, runs):
        if r["scenario"] in res and r["scenario"] != "hardware":
            res[r["scenario"]][(r["model"], r["P"], "cc", r["stage"])] = (
                s["step_s_mean"], per_step(s, "ring_sealed"), per_step(s, "bytes_sealed"))
    return res


def crossover(every, model, P):
    """cc's overhead over off in the sweep of (model, P), fitted as a x messages + b x bytes sealed per step
    over every stage and bucket (least squares, both >= 0): (a seconds per message, b seconds per byte,
    the crossover a / b in bytes), or None with fewer than three runs or no per-byte part."""
    rows = []
    for (m, p, mode, stage, bucket), got in every.items():
        off = every.get((m, p, "off", stage, bucket))
        if (m, p, mode) == (model, P, "cc") and off is not None:
            rows.append((got[1], got[2], got[0] - off[0]))
    if len(rows) < 3:
        return None
    sxx = sum(x * x for x, _, _ in rows)
    syy = sum(y * y for _, y, _ in rows)
    sxy = sum(x * y for x, y, _ in rows)
    sxz = sum(x * z for x, _, z in rows)
    syz = sum(y * z for _, y, z in rows)
    det = sxx * syy - sxy * sxy
    if det <= 0:
        return None
    a, b = (sxz * syy - syz * sxy) / det, (syz * sxx - sxz * sxy) / det
    if a < 0 or b <= 0:  # the non-negative fit puts the whole overhead on one side
        a, b = (0.0, syz / syy) if a < 0 else (sxz / sxx, 0.0)
    return (a, b, a / b) if b > 0 else None


def ms(s):
    return f"{1e3 * s:.3f}"


def mib(b):
    return f"{b / 2**20:.1f}"


def rows(res, models, ranks):
    out = []
    for m in models:
        for P in ranks:
            for mode in MODES[1:]:
                for stage in STAGES:
                    got, off = res.get((m, P, mode, stage)), res.get((m, P, "off", stage))
                    ddp = res.get((m, P, mode, "none"))
                    if got is None or off is None:
                        continue
                    out.append([m, str(P), mode, STAGE_NAMES[stage], ms(off[0]), ms(got[0]),
                                f"{got[0] / off[0]:.2f}x", "-" if ddp is None else f"{got[0] / ddp[0]:.3f}x",
                                f"{got[1]:.0f}", mib(got[2])])
    return out


def findings(res, models, ranks):
    """One phrase per (model, P, mode): each stage's step over DDP's, the collective messages it adds and its
    bytes sealed over DDP's."""
    words = []
    for m in models:
        for P in ranks:
            for mode in MODES[1:]:
                ddp = res.get((m, P, mode, "none"))
                got = [(st, res[(m, P, mode, st)]) for st in STAGES[1:] if (m, P, mode, st) in res]
                if ddp is None or not got:
                    continue
                words.append(f"{m} P={P} {mode}: " + ", ".join(
                    f"{STAGE_NAMES[st]} {r[0] / ddp[0]:.3f}x DDP's step with {r[1] - ddp[1]:+.0f} messages, "
                    f"{r[2] / ddp[2]:.2f}x its bytes" for st, r in got))
    return words


def sweep_rows(every, model, P, buckets):
    out = []
    for bucket in buckets:
        for stage in SWEEP_STAGES:
            got, off = every.get((model, P, "cc", stage, bucket)), every.get((model, P, "off", stage, bucket))
            if got is not None and off is not None:
                out.append([f"{bucket:g}", STAGE_NAMES[stage], ms(off[0]), ms(got[0]), f"{got[0] / off[0]:.2f}x",
                            f"{got[1]:.0f}", mib(got[2])])
    return out


def sweep_text(every, model, P, buckets):
    body = sweep_rows(every, model, P, buckets)
    if not body:
        return ""
    head = ["bucket MiB", "stage", "off ms/step", "cc ms/step", "over off", "messages sealed/step", "MiB sealed/step"]
    text = (f"### Bucket (unit) sweep: {model}, P = {P}, cc\n\n| " + " | ".join(head) + " |\n|"
            + "---|" * len(head) + "\n" + "\n".join("| " + " | ".join(r) + " |" for r in body) + "\n\n")
    fit = crossover(every, model, P)
    if fit is not None:
        a, b, x = fit
        text += (f"cc's overhead over off, fitted over these runs: {1e6 * a:.1f} us per message sealed and "
                 f"{1e9 * b:.3f} ns per byte sealed (every byte of a message is sealed, copied through the bounce "
                 f"buffers and opened), so a message of **{x / 2**20:.2f} MiB** costs as much in its fixed costs "
                 "as in its bytes: shorter messages (more ranks, smaller buckets) are dominated by the per-message "
                 "cost, longer ones by the per-byte cost.\n\n")
    return text


def section(res, hardware_us, models=MODELS, ranks=RANKS, every=None, skipped=(), sweep=None, buckets=BUCKETS,
            scen=None, toll_us=None):
    """The report's "Sharding" section (markdown; "" when no run is there). skipped: (model, P, stage,
    GiB per rank) that the emulated GPU does not hold; sweep: the bucket sweep's (model, P); scen: the
    named scenarios' results (load_scenarios), toll_us paper-fit's per-crossing cost."""
    body = rows(res, models, ranks)
    if not body:
        return ""
    head = ["model", "P", "tee", "stage", "off ms/step", "ms/step", "over off", "over DDP (same tee)",
            "collective messages sealed/step", "MiB sealed/step"]
    text = ("## Sharded data parallelism under a TEE: DDP vs ZeRO-1, ZeRO-2 and ZeRO-3 (emulated H100, virtual "
            "time)\n\n`--shard none|optimizer|gradients|params`, 25 MiB buckets, the ring; cc and fast on H100 CC hardware "
            f"(`--cc-hardware {CC_HARDWARE}`, {hardware_us:g} us per crossing, ISPASS 2025). \"over off\" is the "
            "step time over the same stage with TEE off; the messages are those rank 0's gradient collectives "
            "sealed per step (DDP: the all-reduce; ZeRO: the reduce-scatter, the gradient norm's parts and the "
            "parameter all-gather after the update, at ZeRO-3 only the pinned buckets', beside every block's gathers "
            "in forward and backward), the bytes all it sealed per step (the batches' ingress too).\n\n")
    folded = [P for P in ranks if folds(P)]
    if folded:
        text += ("P = " + ", ".join(map(str, folded)) + f": a folded ring of {FOLD_RANKS} virtual ranks (`--model-ranks`, "
                 "the whole ring's step for every stage), off and cc only: a fold's all-gathers go hop by hop, and "
                 "fast's forwards its ciphertext.\n\n")
    if skipped:
        text += ("Not run, as an 80 GiB H100 does not hold a rank (`teetrain models --ranks P --shard S`, the "
                 "check `teetrain train` refuses them with): "
                 + ", ".join(f"{m} P={P} {STAGE_NAMES[st]} ({gib:.1f} GiB)" for m, P, st, gib in skipped) + ".\n\n")
    text += ("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
             + "\n".join("| " + " | ".join(r) + " |" for r in body) + "\n\n")
    words = findings(res, models, ranks)
    if words:
        text += "**Findings**: " + "; ".join(words) + ".\n\n"
    if every is not None and sweep is not None:
        text += sweep_text(every, *sweep, buckets)
    if scen:
        text += scenario_text(scen, hardware_us, toll_us, models, ranks)
    return text


def scenario_label(name, toll_us, hardware_us):
    if is_derived(name):
        return (f"{name} (PAPER-FITTED, DERIVED FROM THE PAPER'S RESULTS: {toll_us / 1e3:.2f} ms per crossing, "
                "no CC hardware costs)")
    what = next(w for n, w, *_ in scenarios.SCENARIOS if n == name)
    return f"{name} ({hardware_us:g} us per crossing; {what})"


def scenario_rows(res, models, ranks):
    """Per (model, P): DDP's cc step, ZeRO-1's and ZeRO-3's over DDP (step; ZeRO-3's bytes and messages too),
    and the crossover of a fit over the three (crossover; None where it does not fit) against ZeRO-3's
    mean message; with the verdicts (ZeRO-3 dearer?, its step nearer its bytes' ratio than its messages'?)."""
    out = []
    for m in models:
        for P in ranks:
            ddp, z1, z3 = (res.get((m, P, "cc", st)) for st in SCENARIO_STAGES)
            if ddp is None or z3 is None:
                continue
            step, nbytes, msgs = z3[0] / ddp[0], z3[2] / ddp[2], z3[1] / ddp[1]
            every = {(m, P, mode, st, SWEEP_BUCKET): res[(m, P, mode, st)] for mode in ("off", "cc")
                     for st in SCENARIO_STAGES if (m, P, mode, st) in res}
            fit = crossover(every, m, P)
            out.append(dict(cells=[m, str(P), f"{ddp[0]:.3f}", "-" if z1 is None else f"{z1[0] / ddp[0]:.3f}x",
                                   f"**{step:.3f}x**", f"{nbytes:.2f}x", f"{msgs:.2f}x",
                                   "-" if fit is None else "0 (all per byte)" if fit[0] == 0 else f"{fit[2] / 2**20:.2f}", f"{z3[2] / z3[1] / 2**20:.2f}"],
                            dearer=step > 1, bytes=abs(step - nbytes) < abs(step - msgs)))
    return out


def scenario_text(scen, hardware_us, toll_us, models, ranks):
    """The sharding section's "under the named scenarios" part: a table per scenario and whether the
    finding (ZeRO-3 costs more than DDP under cc, following its bytes) holds under it."""
    head = ["model", "P", "cc: DDP s/step", "ZeRO-1 over DDP", "ZeRO-3 over DDP: step", "bytes sealed",
            "messages sealed", "crossover MiB", "ZeRO-3 MiB per message"]
    text = ""
    for name, res in scen.items():
        body = scenario_rows(res, models, ranks)
        if not body:
            continue
        dearer, follows = all(r["dearer"] for r in body), all(r["bytes"] for r in body)
        text += (f"#### Under the scenario {scenario_label(name, toll_us, hardware_us)}\n\n| " + " | ".join(head)
                 + " |\n|" + "---|" * len(head) + "\n"
                 + "\n".join("| " + " | ".join(r["cells"]) + " |" for r in body) + "\n\n"
                 + f"The finding {'holds' if dearer and follows else 'DOES NOT HOLD'} under {name}: ZeRO-3 costs "
                 + ("more than DDP" if dearer else "less than DDP" if not any(r["dearer"] for r in body) else
                    "more than DDP in some rows only")
                 + " under cc, its step "
                 + ("nearer its bytes' ratio than its messages' in every row" if follows else
                    "nearer its messages' ratio than its bytes' in "
                    f"{sum(not r['bytes'] for r in body)} of {len(body)} rows")
                 + ".\n\n")
    if not text:
        return ""
    return ("### Under the named scenarios (tools/scenarios.py)\n\nThe cc runs of DDP, ZeRO-1 and ZeRO-3 under each "
            "named scenario that changes cc's costs alone, beside the grid's TEE-off runs (`--shard-scenarios`). "
            "The crossover is the message size at which the per-message and per-byte parts of cc's overhead over "
            "off are equal (least squares over the three stages): messages shorter than it are priced by their "
            "crossings.\n\n" + text)


def figure(res, every, out, models=MODELS, ranks=RANKS, sweep=None, buckets=BUCKETS):
    """fig_sharding.png: cc's slowdown over off per stage against P (left) and, in the bucket sweep, cc's
    overhead split into its per-message and per-byte parts (right). Returns its name, or None (no
    matplotlib, or no runs)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    series = {}
    for m in models:
        for st in STAGES:
            pts = [(P, res[(m, P, "cc", st)][0] / res[(m, P, "off", st)][0]) for P in ranks
                   if (m, P, "cc", st) in res and (m, P, "off", st) in res]
            if pts:
                series[f"{m} {STAGE_NAMES[st]}"] = pts
    if not series:
        return None
    import sys
    sys.dont_write_bytecode = True  # Note [Figure palette]: tools/figures/palette.py
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures"))
    import palette
    matplotlib.rcParams.update(palette.rcparams())
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for (label, pts), (colour, hatch, marker) in zip(series.items(), palette.series_styles(len(series))):
        a1.plot(*zip(*pts), marker=marker, color=colour, ls=palette.LINESTYLES[hatch], label=label)
    a1.set_xscale("log", base=2)
    a1.set_xticks(list(ranks))
    a1.set_xticklabels([str(P) for P in ranks])
    a1.minorticks_off()
    a1.set_xlabel("ranks P")
    a1.set_ylabel("cc step time / TEE off (same stage)")
    a1.set_title("cc slowdown per stage")
    a1.legend()
    fit = crossover(every, *sweep) if sweep is not None else None
    if fit is not None:
        a, b, x = fit
        styles = palette.series_styles(2 * len(SWEEP_STAGES))
        for k, st in enumerate(SWEEP_STAGES):
            pts = sorted((bk, every[(sweep[0], sweep[1], "cc", st, bk)]) for bk in buckets
                         if (sweep[0], sweep[1], "cc", st, bk) in every)
            if not pts:
                continue
            xs = [bk for bk, _ in pts]
            for j, (what, ys) in enumerate((("per message", [1e3 * a * r[1] for _, r in pts]),
                                            ("per byte", [1e3 * b * r[2] for _, r in pts]))):
                colour, hatch, marker = styles[2 * k + j]
                a2.plot(xs, ys, marker=marker, color=colour, ls=palette.LINESTYLES[hatch],
                        label=f"{STAGE_NAMES[st]} {what}")
        a2.set_xscale("log")
        a2.set_yscale("log")  # the per-byte part is tens of times the per-message part
        a2.set_xticks(sorted(buckets))
        a2.set_xticklabels([f"{b:g}" for b in sorted(buckets)])
        a2.minorticks_off()
        a2.set_xlabel("bucket MiB")
        a2.set_ylabel("cc overhead, ms per step")
        a2.set_title(f"{sweep[0]} P={sweep[1]}: crossover at {x / 2**20:.2f} MiB per message")
        a2.legend()
    else:
        a2.set_axis_off()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig_sharding.png"), dpi=110)
    plt.close(fig)
    return "fig_sharding"
