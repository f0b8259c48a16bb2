#!/usr/bin/env python3
"""Reproduce the shape of Lee et al.'s GPU-TEE DDP overhead study with teetrain.

Runs a grid of `teetrain train` runs (models, ranks, --tee off|cc|fast, bucket sizes, overlap, the
ablation of fast's switches; the emulated ones in virtual time, all in one `teetrain runs` process, and
with --wall-clock the real-compute ones, each its own `mpirun` job), collects every run's --summary
into runs.jsonl and runs.csv, fits the scaling model (`teetrain model`), and writes report.md with tables and, when
matplotlib is importable, PNG figures. Paper-scale models run with emulated GPU compute
(`--compute emulate --gpu h100`): forward/backward are waits, gradients/buckets/ring/crypto are real.

    /usr/bin/python3 tools/reproduce.py --quick --out runs/repro-quick    # about 15 s on 2 cores
    /usr/bin/python3 tools/reproduce.py --out runs/repro-full             # the full grid

Any failing run stops the script with a non-zero exit, its command line and the tail of its log.
Finished runs are kept and skipped on a re-run (use --force to redo them). See docs/reproducing.md.
"""
import argparse
import csv
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import algo_study  # noqa: E402  (tools/algo_study.py: ring vs rhd vs auto under a TEE)
import predict_paper
import scenarios  # noqa: E402  (tools/predict_paper.py: the independent H100 CC figures)
import shard_study  # noqa: E402  (tools/shard_study.py: DDP vs ZeRO-1/2 under a TEE)

# Reference figures (docs/reference/published-numbers.md).
PAPER = {
    "mean_4gpu": 8.68,        # Lee et al., arXiv 2501.11771: mean slowdown on 4 GPUs
    "gpt2_xl_4gpu": 41.6,     # same, GPT-2-XL on 4 GPUs
    "gpt2_xl_tuned": 3.03,    # same, GPT-2-XL after enlarging bucket_cap_mb
}
PAPER_SRC = "Lee et al., arXiv 2501.11771"

TEE_MODES = ["off", "cc", "fast"]
# Presets' context lengths, where shorter than the default --seq / --emu-seq (the other Llamas' are 8192+).
CONTEXT = {"gpt2-tiny": 32, "gpt2-mini": 256, "bert-base": 512, "bert-large": 512, "llama-tiny": 32, "llama-mini": 256}
IMAGE_PREFIX = "resnet"  # image classifiers read --image-data and have no sequence length
# The ablation: cc plus one of fast's switches at a time, then fast (all of them).
ABLATION = [
    ("cc", ["--tee", "cc"]),
    ("cc+pipeline", ["--tee", "cc", "--tee-pipeline", "on"]),
    ("cc+forward-ag", ["--tee", "cc", "--tee-forward-ag", "on"]),
    ("cc+crypto-threads", ["--tee", "cc", "--crypto-threads", "2"]),
    ("cc+direct-ingress", ["--tee", "cc", "--tee-direct-ingress", "on"]),
    ("cc+device-crypto", ["--tee", "cc", "--tee-device-crypto", "on"]),
    ("fast", ["--tee", "fast"]),
]


# Note [Fused attention baseline] (core/emulated/emulated_gpu.h): each --gpu-baseline as a report names it,
# short (a table's header: tools/topology_study.py) and in a sentence (this report's).
BASELINES = {
    "teetrain": ("teetrain's kernels",
                 "with teetrain's own kernels (attention materialised) as the TEE-off step"),
    "fused-attention": ("PyTorch-class, fused attention (--gpu-baseline fused-attention)",
                        "with a PyTorch-class TEE-off step (`--gpu-baseline fused-attention`: attention one "
                        "fused kernel at an efficiency fitted to PyTorch 2.11's fused GPT-2 steps on an H200, "
                        "tools/fit_fused_attention.py)"),
}

def grid(quick, emulate_ok, wall_clock=True):
    """Yields run specs: dict(id, group, model, P, variant, tee_args, bucket, overlap, emulate). wall_clock:
    include the real-compute runs (timed by the wall clock; --wall-clock)."""
    runs = []

    def add(group, model, P, variant, tee_args, bucket=25, overlap="on", emulate=False):
        rid = f"{model}-P{P}-{variant}-b{bucket:g}-ov{overlap}" + ("-emu" if emulate else "")
        if any(r["id"] == rid for r in runs):
            runs[[r["id"] for r in runs].index(rid)]["groups"].add(group)
            return
        runs.append(dict(id=rid, groups={group}, model=model, P=P, variant=variant, tee_args=tee_args,
                         bucket=bucket, overlap=overlap, emulate=emulate))

    tee = [(m, ["--tee", m]) for m in TEE_MODES]
    # 1. Slowdown vs ranks, real compute on small models.
    for model in (["gpt2-mini"] if quick else ["gpt2-tiny", "gpt2-mini"]) if wall_clock else []:
        for P in [1, 2, 4]:
            for v, a in tee:
                add("ranks", model, P, v, a)
    if not emulate_ok:
        return runs
    big = "gpt2" if quick else "gpt2-large"
    # 2. Slowdown vs ranks and vs model size, emulated H100 compute.
    for P in ([2, 4] if quick else [1, 2, 4, 8]):
        for v, a in tee:
            add("ranks-emu", big, P, v, a, emulate=True)
    for model in (["gpt2", "gpt2-medium", "gpt2-large"] if quick else ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"]):
        for v, a in tee:
            add("model-size", model, 4, v, a, emulate=True)
    # 2b. The paper's other two families (its 8.68x averages ResNet, BERT and GPT-2), P=4, emulated.
    for model in (["bert-base", "resnet50"] if quick else ["bert-base", "bert-large", "resnet50", "resnet152"]):
        for v, a in tee:
            add("families", model, 4, v, a, emulate=True)
    # 3. Bucket size (0 = one bucket for the whole model), and cc without H100 CC's per-transfer cost
    #    ("cc-own": teetrain's sealing alone) beside it.
    for b in [1, 5, 25, 100, 0]:
        for v, a in tee + [("cc-own", ["--tee", "cc", "--cc-transfer-us", "0"])]:
            add("buckets", "gpt2", 4, v, a, bucket=b, emulate=True)
    # 4. Overlap on/off.
    for ov in ["on", "off"]:
        for v, a in tee:
            add("overlap", "gpt2", 4, v, a, overlap=ov, emulate=True)
    # 5. Ablation of fast's switches: on gpt2-large in the full grid; the quick grid uses gpt2 to stay
    #    short (gpt2-large's off/cc/fast are in the model-size group either way).
    abl_model = "gpt2" if quick else "gpt2-large"
    add("ablation", abl_model, 4, "off", ["--tee", "off"], emulate=True)
    for v, a in ABLATION:
        add("ablation", abl_model, 4, v, a, emulate=True)
    return runs


def image_data_present(name):
    """Whether `teetrain train --data name` finds an image set: a path, or a name under /usr/share/datasets."""
    return os.path.exists(name) or os.path.isdir(os.path.join("/usr/share/datasets", name))


# A given --cc-transfer-us within this share of the paper-fitted cost on today's emulator is reported as
# paper-fitted (an earlier emulator's fit, such as 8320.8 us, is within 8% of today's).
PAPER_FIT_SHARE = 0.10


def label_given_toll(args, out, runs, emulate_ok):
    """Where a number came from: ISPASS 2025's figure, or the paper-fitted cost (solved afresh from the
    calibration run: calibrate_transfer), or neither ("given"). Sets args.toll_source and args.calibration."""
    given = args.cc_transfer_us
    if given <= 0:
        return
    if abs(given - round(predict_paper.independent_crossing_us(), 1)) < 0.05:
        args.toll_source = "ispass"
        return
    have_cal = os.path.exists(os.path.join(out, "calibration.json"))
    if not (emulate_ok and any(r["emulate"] for r in runs) and not args.dry_run and (have_cal or not args.report_only)):
        return
    args.cc_transfer_us = 0.0  # the calibration run itself has TEE off
    args.calibration = calibrate_transfer(args, out)
    args.cc_transfer_us = given
    if abs(given / args.calibration["cc_transfer_us"] - 1) <= PAPER_FIT_SHARE:
        args.toll_source = "paper-fitted"
    print(f"reproduce: --cc-transfer-us {given:g} is " + (
        f"PAPER-FITTED (the paper's pair gives {args.calibration['cc_transfer_us']:g} us on today's emulator)"
        if args.toll_source == "paper-fitted" else "given: neither ISPASS 2025's figure nor the paper-fitted cost"),
        flush=True)


def calibrate_transfer(args, out):
    """The fixed cost of one H100 CC bounce-buffer crossing that Lee et al.'s own figures imply.

    On 4 GPUs their GPT-2-XL goes from 41.6x (DDP's default 25 MB buckets) to 3.03x (larger buckets)
    slower than without TEE, and they attribute the difference to the number of round trips. Fewer
    buckets change nothing else, so (41.6 - 3.03) x T_off = toll x (crossings at 25 MiB - crossings
    with one bucket), with T_off our emulated gpt2-xl step at P = 4 with TEE off and, per bucket and
    rank, 2 x 2(P-1) crossings (a device -> host copy before each seal, a host -> device copy after each
    open). Assumes their tuned bucket held the whole model (the paper does not give its size; a
    bucket of a tenth of the model would raise the toll by ~7%). T_off is measured at P = 1: emulated
    compute does not depend on P, the plaintext ring over emulated NVLink adds ~1% at P = 4 on GPUs (it
    hides under backward), and one rank keeps this host's core sharing out of the figure."""
    path = os.path.join(out, "calibration.json")
    if os.path.exists(path) and not args.force:
        with open(path) as f:
            return json.load(f)
    r = dict(id="calibration-gpt2-xl-P1-off", groups={"calibration"}, model="gpt2-xl", P=1, variant="off",
             tee_args=["--tee", "off"], bucket=25, overlap="on", emulate=True)
    print("reproduce: calibration run (gpt2-xl, TEE off, one rank; --cc-transfer-us N skips it)", flush=True)
    summary, _, _ = run_one(args, r, out)
    with open(summary) as f:
        rec = json.load(f)
    P, buckets, t_off = 4, rec["buckets"], rec["step_s_mean"]
    per_bucket = 2 * 2 * (P - 1)
    toll_s = (PAPER["gpt2_xl_4gpu"] - PAPER["gpt2_xl_tuned"]) * t_off / (per_bucket * (buckets - 1))
    cal = {"cc_transfer_us": round(toll_s * 1e6, 1), "gpt2_xl_off_step_s": t_off, "buckets_25mib": buckets,
           "crossings_per_bucket": per_bucket, "source": PAPER_SRC}
    with open(path, "w") as f:
        json.dump(cal, f, indent=1)
    return cal


def mpirun_prefix(P):
    exe = shutil.which("mpirun") or "mpirun"
    cmd = [exe, "-np", str(P), "--oversubscribe", "-x", "OMPI_MCA_pml=ob1", "-x", "OMPI_MCA_btl=self,vader,tcp"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


# Real-compute steps vary by about +-5% on a machine whose ranks share cores, and the trends are
# judged with a 5% tolerance: those runs take 10x --steps timed steps (a second or two, next to the
# 3-6 s every run spends starting up). Emulated runs are in virtual time and take --steps.
def timed_steps(args, r):
    # Emulated runs are in virtual time (docs/design.md §11): every timed step is the same, on any
    # machine and under any load, so --steps of them say all there is to say.
    if r["emulate"]:
        return args.steps
    return args.steps * 10


def repeats(args, r):
    """How many times a run is made (the median by step time is kept). Emulated runs are computed in
    virtual time, the same every time: once. --repeats N repeats the real-compute runs, which are
    wall-clock measurements."""
    return 1 if r["emulate"] else args.repeats


def train_cmd(args, r, summary):
    emu = r["emulate"]
    batch, seq = ((r.get("batch") or args.emu_batch), args.emu_seq) if emu else (args.batch, args.seq)
    seq = min(seq, CONTEXT.get(r["model"], seq))
    image = r["model"].startswith(IMAGE_PREFIX)
    shape = ["--data", args.image_data, "--batch", str(args.image_batch)] if image else \
        ["--data", args.data, "--batch", str(batch), "--seq", str(seq)]
    # Emulated runs are in virtual time: one process (or the spec's "processes") hosts all P ranks as threads
    # (--ranks-per-process), whose virtual times equal P processes' bit for bit (docs/reproducing.md,
    # "Virtual ranks").
    # A spec with model_ranks folds a ring of P onto its ranks_run (docs/reproducing.md, "Folded ring").
    procs = r.get("processes", 1)
    launch = mpirun_prefix(procs) + [args.bin, "train", "--ranks-per-process",
                                     str(r.get("ranks_run", r["P"]) // procs)] if emu else \
        mpirun_prefix(r["P"]) + [args.bin, "train"]
    launch += ["--model-ranks", str(r["model_ranks"])] if r.get("model_ranks") else []
    cmd = launch + ["--model", r["model"], *shape,
                                  "--steps", str(timed_steps(args, r) + args.warmup), "--timing-warmup", str(args.warmup),
                                  "--bucket-mb", str(r["bucket"]), "--overlap", r["overlap"],
                                  "--val-batches", "0", "--no-progress", "--summary", summary]
    cmd += r["tee_args"]
    if r["variant"] != "off":
        # TEE ranks attest with certified identities of the emulated vendor (provisioned in main()).
        vendor = os.path.join(args.out, "vendor")
        cmd += ["--allow-plain-data", "--trust-root", os.path.join(vendor, "vendor_root.crt"),
                "--device-identity", os.path.join(vendor, "device_{rank}.pem")]
    if emu:
        cmd += ["--compute", "emulate", "--gpu", args.gpu, "--link", args.link]
        if args.gpu_baseline != "teetrain":
            cmd += ["--gpu-baseline", args.gpu_baseline]
        if args.cc_transfer_us and "--cc-transfer-us" not in r["tee_args"]:
            cmd += ["--cc-transfer-us", f"{args.cc_transfer_us:g}"]
    if args.link_gbps:
        cmd += ["--link-gbps", str(args.link_gbps)]
    if args.ingress_gbps:
        cmd += ["--ingress-gbps", str(args.ingress_gbps)]
    return cmd


def run_repeated(args, r, out):
    """Makes the run repeats(args, r) times; returns (summary record of the median run, command, seconds
    spent, every repeat's step time), or a None record when no repeat is there (--dry-run, or
    --report-only of a run never made). Repeats 2.. are stored as <id>-r2.json, <id>-r3.json."""
    recs, cmd, spent = [], None, 0.0
    for k in range(repeats(args, r)):
        summary, cmd, dt = run_one(args, r, out, suffix="" if k == 0 else f"-r{k + 1}")
        spent += dt
        if summary is None:
            break
        with open(summary) as f:
            recs.append(json.load(f))
    if not recs:
        return None, cmd, spent, []
    steps = [x["step_s_mean"] for x in recs]
    median = sorted(recs, key=lambda x: x["step_s_mean"])[len(recs) // 2]
    return median, cmd, spent, steps


def plan_line(cmd):
    """A `teetrain runs` plan's line for a train command: what follows `train`."""
    return " ".join(shlex.quote(c) for c in cmd[cmd.index("train") + 1:])


def make_planned(args, out, specs, tag):
    """Makes the emulated runs among specs whose summaries are missing (all with --force) in one
    `teetrain runs` process: virtual time needs no process of its own per run, and a run's process
    start-up, MPI_Init and exit were most of a small emulated run's wall time (docs/reproducing.md, "Many
    runs in one process"). Returns {run id: seconds}. A failing run stops the script as run_one does,
    naming the run; the runs made before it are kept."""
    todo = [r for r in specs if r["emulate"] and (args.force or not os.path.exists(
        os.path.join(out, "runs", r["id"] + ".json")))]
    if not todo or args.report_only or args.dry_run:
        return {}
    cmds = [train_cmd(args, r, os.path.join(out, "runs", r["id"] + ".json")) for r in todo]
    args.plans = getattr(args, "plans", 0) + 1  # a study may make several plans (scenarios: two phases)
    name = f"plan-{args.plans}-{tag}"
    plan, log = os.path.join(out, name + ".txt"), os.path.join(out, "logs", name + ".log")
    with open(plan, "w") as f:
        f.write("".join(plan_line(c) + "\n" for c in cmds))
    cmd = mpirun_prefix(1) + [args.bin, "runs", plan]
    with open(log, "w") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=args.run_timeout * len(todo))
    with open(log) as f:
        text = f.read()
    done = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"line (\d+) done \(run \d+ of \d+, ([0-9.]+) s wall", text)}
    if rc != 0:
        failed = re.search(r"line (\d+) failed", text)
        i = int(failed.group(1)) - 1 if failed else len(done)
        sys.stderr.write(f"\nreproduce: RUN FAILED (exit {rc}): {todo[i]['id'] if i < len(todo) else '?'}\n  command: "
                         + " ".join(shlex.quote(c) for c in (cmds[i] if i < len(cmds) else cmd)) + f"\n  log: {log}\n"
                         + "--- log tail ---\n" + "".join(text.splitlines(True)[-40:]) + "---\n")
        sys.exit(1)
    for r in todo:
        r["planned"] = True  # made now: run_one reads its summary even with --force
    return {todo[line - 1]["id"]: dt for line, dt in done.items()}


def run_one(args, r, out, suffix=""):
    summary = os.path.join(out, "runs", r["id"] + suffix + ".json")
    log = os.path.join(out, "logs", r["id"] + suffix + ".log")
    cmd = train_cmd(args, r, summary)
    if os.path.exists(summary) and (not args.force or r.get("planned")):
        return summary, cmd, 0.0
    if args.report_only:
        return None, cmd, 0.0
    if args.dry_run:
        print(" ".join(shlex.quote(c) for c in cmd))
        return None, cmd, 0.0
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=args.run_timeout)
    if rc != 0 or not os.path.exists(summary):
        with open(log) as f:
            tail = f.readlines()[-40:]
        sys.stderr.write(f"\nreproduce: RUN FAILED (exit {rc}): {r['id']}\n  command: "
                         + " ".join(shlex.quote(c) for c in cmd) + f"\n  log: {log}\n--- log tail ---\n"
                         + "".join(tail) + "---\n")
        sys.exit(1)
    return summary, cmd, time.time() - t0


def flat(rec):
    """One CSV row: run metadata, step time, and every phase mean / counter total of rank 0."""
    row = {k: rec["run"][k] for k in ("id", "model", "P", "variant", "bucket", "overlap", "emulate")}
    row["groups"] = "+".join(sorted(rec["run"]["groups"]))
    row["step_s"] = rec["step_s_mean"]
    row["step_s_repeats"] = " ".join(f"{x:.6f}" for x in rec["run"].get("step_s_repeats", []))
    row["phases_accounted_s"] = rec.get("phases_accounted_s")
    row["num_params"] = rec.get("num_params")
    row["buckets"] = rec.get("buckets")
    for name, v in rec.get("phases", {}).items():
        row["phase_" + name] = v.get("mean")
    for name, v in rec.get("counters", {}).items():
        row["counter_" + name] = v[0] if isinstance(v, list) and v else v
    return row


def slowdowns(recs, group):
    """{(model, P, bucket, overlap): {variant: step_s}} for one group, plus slowdown vs off."""
    table = {}
    for rec in recs:
        r = rec["run"]
        if group not in r["groups"]:
            continue
        table.setdefault((r["model"], r["P"], r["bucket"], r["overlap"]), {})[r["variant"]] = rec["step_s_mean"]
    return table


def md_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def fmt_x(step, base):
    return f"{step / base:.2f}x" if base and step else "-"


def slowdown_section(recs, group, title, key_name, key_fn, variants):
    t = slowdowns(recs, group)
    if not t:
        return "", {}
    rows, series = [], {v: [] for v in variants if v != "off"}
    for key in sorted(t, key=key_fn):
        d = t[key]
        base = d.get("off")
        row = [key_fn(key, label=True)] + [f"{d[v]:.3f}" if v in d else "-" for v in variants]
        row += [fmt_x(d.get(v), base) for v in variants if v != "off"]
        rows.append(row)
        for v in series:
            if v in d and base:
                series[v].append((key_fn(key), d[v] / base))
    headers = [key_name] + [f"{v} s/step" for v in variants] + [f"{v} slowdown" for v in variants if v != "off"]
    return f"## {title}\n\n" + md_table(headers, rows) + "\n", series


def figures(out, recs, sections):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not importable here (run with /usr/bin/python3 and python3-matplotlib): no figures."
    # Colours, patterns and text size: Note [Figure palette] (tools/figures/palette.py).
    sys.dont_write_bytecode = True  # no cache of palette.py in the repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures"))
    import palette
    matplotlib.rcParams.update(palette.rcparams())
    made = []
    for name, (title, xlabel, series, logx) in sections.items():
        if not any(series.values()):
            continue
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        for (v, pts), (colour, hatch, marker) in zip(series.items(), palette.series_styles(len(series))):
            if pts:
                xs, ys = zip(*sorted(pts))
                ax.plot(xs, ys, marker=marker, color=colour, ls=palette.LINESTYLES[hatch], label=v)
        ax.axhline(PAPER["mean_4gpu"], ls=":", c=palette.DARK_GREY, lw=1.2,
                   label=f"paper mean 4 GPUs ({PAPER['mean_4gpu']}x)")
        ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")  # every x is > 0: parameters, or MiB with the whole model at 1e6
        xs_all = sorted({x for pts in series.values() for x, _ in pts})
        if name == "fig_buckets" and xs_all:
            ax.set_xticks(xs_all)
            ax.set_xticklabels(["whole" if x >= 1e6 else f"{x:g}" for x in xs_all])
            ax.minorticks_off()
        elif not logx and xs_all and all(float(x).is_integer() for x in xs_all):
            ax.set_xticks(xs_all)  # ranks: whole numbers only, at the measured points
        ax.set_xlabel(xlabel)
        ax.set_ylabel("step time / TEE off")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, name + ".png"), dpi=110)
        plt.close(fig)
        made.append(name)
    # Stacked phase breakdown (mean over ranks, per step) of the model-size and ablation runs.
    phases = ["data", "ingress", "forward", "backward", "comm_exposed", "optimizer"]
    for name, group in (("fig_phases", "model-size"), ("fig_ablation", "ablation")):
        sel = [r for r in recs if group in r["run"]["groups"]]
        if not sel:
            continue
        sel.sort(key=lambda r: (r.get("num_params", 0), r["run"]["variant"]))
        labels = [f"{r['run']['model']}\n{r['run']['variant']}" for r in sel]
        fig, ax = plt.subplots(figsize=(max(7, 0.8 * len(sel)), 5.5))
        bottom = [0.0] * len(sel)
        bars = phase_bars(sel, phases)
        for (ph, vals), (colour, hatch, _) in zip(bars, palette.series_styles(len(bars))):
            # The hatch is drawn in the edge colour: black lines on the fill, no outline.
            ax.bar(range(len(sel)), vals, bottom=bottom, label=ph, color=colour, hatch=hatch or None,
                   edgecolor=palette.INK if hatch else colour, linewidth=0)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.plot(range(len(sel)), [r["step_s_mean"] for r in sel], "k_", ms=18, label="measured step")
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(labels, rotation=60)
        ax.set_ylabel("seconds per step (rank mean)")
        ax.set_title("phase breakdown (P=4, emulated H100 compute)" if group == "model-size" else "ablation of fast (P=4)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
        fig.tight_layout()
        fig.savefig(os.path.join(out, name + ".png"), dpi=110, bbox_inches="tight")
        plt.close(fig)
        made.append(name)
    return made, ""


# What the communication thread spent its time on (virtual time reports each: docs/design.md §11).
COMM_PARTS = (("sealing", ("seal", "open")), ("CC crossings", ("stage",)), ("link", ("link",)),
              ("waiting for a neighbour", ("wait",)), ("adds", ("reduce",)))


def phase_bars(sel, phases):
    """(label, per-run values) of a stacked phase bar: the training thread's phases, with comm_exposed
    split in proportion to what the communication thread spent its time on (its phases overlap
    backward, so only their shares are meaningful for the exposed part)."""
    get = lambda r, ph: r["phases"].get(ph, {}).get("mean", 0.0)
    bars = []
    for ph in phases:
        if ph != "comm_exposed":
            bars.append((ph, [get(r, ph) for r in sel]))
            continue
        parts = [[sum(get(r, p) for p in names) for r in sel] for _, names in COMM_PARTS]
        totals = [sum(col) for col in zip(*parts)]
        for (label, _), vals in zip(COMM_PARTS, parts):
            bars.append((f"exposed: {label}",
                         [get(r, ph) * v / t if t > 0 else 0.0 for r, v, t in zip(sel, vals, totals)]))
        bars.append(("exposed: other", [get(r, ph) if t == 0 else 0.0 for r, t in zip(sel, totals)]))
    return bars


# Run-to-run noise on a shared 2-core machine: a step of a trend that goes the wrong way by less than
# this is not counted against it.
TREND_TOLERANCE = 0.05


def spread_text(wall):
    """The measured runs' spread over their repeats: the widest (max - min) / median, and whose."""
    spreads = [((max(s) - min(s)) / sorted(s)[len(s) // 2], r["run"]["id"]) for r in wall
               for s in [r["run"].get("step_s_repeats") or []] if len(s) > 1 and min(s) > 0]
    if not spreads:
        return " (one repeat each: no spread to give)"
    widest = max(spreads)
    return (f"; the repeats of one run differ by at most {100 * widest[0]:.0f}% of its median ({widest[1]}), "
            f"{100 * sum(s for s, _ in spreads) / len(spreads):.0f}% on average")


def checks_section(recs, out, title, scaling_model):
    """The study's findings and the report's own consistency, each as a measured yes/no, over `recs` (one
    kind of time: the virtual-time runs, or the wall-clock ones); scaling_model: add the check of
    `teetrain model`, which is fitted to every run, measured ones included."""
    rows = []

    def trend(group, keyf, label, want_up, variant="cc", info=False):
        t = slowdowns(recs, group)
        # One trend per model where a group holds several (the full grid's ranks: gpt2-tiny and gpt2-mini),
        # except for the model-size group, whose trend runs across its models.
        models = sorted({k[0] for k in t}) if group != "model-size" else [None]
        for model in models:
            pts = sorted((keyf(k, r), d[variant] / d["off"]) for k, d in t.items() for r in [k]
                         if variant in d and "off" in d and model in (None, k[0]))
            if len(pts) >= 2:
                trend_row(pts, label + (f" ({model})" if len(models) > 1 else ""), want_up, info)

    def trend_row(pts, label, want_up, info):
        ys = [y for _, y in pts]
        # Holds: the ends differ in the stated direction by more than the noise, and no step between
        # neighbours goes the other way by more than the noise.
        tol = TREND_TOLERANCE
        if want_up:
            ok = ys[-1] > ys[0] * (1 + tol) and all(b >= a * (1 - tol) for a, b in zip(ys, ys[1:]))
        else:
            ok = ys[-1] < ys[0] * (1 - tol) and all(b <= a * (1 + tol) for a, b in zip(ys, ys[1:]))
        verdict = "yes" if ok else "NO"
        rows.append([label, " → ".join(f"{y:.2f}x" for y in ys), f"({verdict}; for information)" if info else verdict])

    params = {r["run"]["model"]: r.get("num_params", 0) for r in recs}
    trend("ranks-emu", lambda k, r: k[1], "cc slowdown grows with ranks (emulated)", True)
    trend("ranks", lambda k, r: k[1], "cc slowdown grows with ranks (real CPU compute)", True)
    trend("model-size", lambda k, r: params.get(k[0], 0), "cc slowdown grows with model size (P=4)", True)
    trend("buckets", lambda k, r: 1e6 if k[2] == 0 else k[2], "cc slowdown shrinks with bucket size (P=4)", False)
    trend("buckets", lambda k, r: 1e6 if k[2] == 0 else k[2],
          "cc-own (no per-transfer cost) shrinks with bucket size (P=4)", False, variant="cc-own", info=True)
    ms = slowdowns(recs, "model-size")
    if ms:
        big = max(ms, key=lambda k: params.get(k[0], 0))
        d = ms[big]
        if all(v in d for v in ("off", "cc", "fast")) and d["cc"] > d["off"]:
            removed = (d["cc"] - d["fast"]) / (d["cc"] - d["off"])
            # Without --cc-hardware direct-what-if, fast's ciphertext crosses H100 CC's bounce buffers
            # as cc's chunks do (Note [CC hardware costs]): what it removes is a finding, not a target.
            rows.append([f"share of cc's overhead fast removes on H100 CC ({big[0]}, P={big[1]}, emulated)",
                         f"{100 * removed:.0f}%", "(for information)"])
    acc = [r["phases_accounted_s"] / r["step_s_mean"] for r in recs if r.get("phases_accounted_s") and r["step_s_mean"]]
    if acc:
        ok = sum(1 for a in acc if 0.95 <= a <= 1.05)
        rows.append(["training-thread phases add up to the step time (within 5%)",
                     f"{ok}/{len(acc)} runs; range {min(acc):.3f}–{max(acc):.3f}", "yes" if ok == len(acc) else "NO"])
    model_json = os.path.join(out, "model.json")
    if scaling_model and os.path.exists(model_json):
        with open(model_json) as f:
            pts = json.load(f).get("points", [])
        errs = [abs(p["error"]) for p in pts]
        if errs:
            within = sum(1 for e in errs if e <= 0.15)
            rows.append(["the scaling model predicts every measured run within 15%",
                         f"{within}/{len(errs)} runs; mean {100 * sum(errs) / len(errs):.1f}%, max {100 * max(errs):.0f}%",
                         "yes" if within == len(errs) else "NO"])
    if not rows:
        return ""
    return (f"## Checks ({title})\n\n" + md_table(["finding", "measured", "holds"], rows)
            + f"\n\nA trend holds when its ends differ in the stated direction by more than "
              f"{100 * TREND_TOLERANCE:.0f}% and no step between neighbours goes the other way by more than that "
              f"(run-to-run noise on a shared machine).\n")


def prediction_section(out):
    """The paper's GPT-2-XL figures predicted from independent hardware figures (tools/predict_paper.py),
    from the calibration run's TEE-off step, then that run and the grid's TEE-off emulated P=4 runs on every
    platform preset (H100 Protected PCIe, Blackwell CC: tools/predict_platforms.py); empty without the
    calibration run."""
    summary = os.path.join(out, "runs", "calibration-gpt2-xl-P1-off.json")
    if not os.path.exists(summary):
        return ""
    # The platform table also predicts the grid's TEE-off emulated P=4 runs (every family).
    others = sorted(glob.glob(os.path.join(out, "runs", "*-P4-off-b25-ovon-emu.json")))
    try:
        runs = [predict_paper.run_from_summary(summary)] + [predict_paper.run_from_summary(p, ranks_ok=True)
                                                             for p in others]
        text, record = predict_paper.predictions(runs)
    except (ValueError, KeyError) as e:
        return f"## Predicted from independent figures\n\npredict_paper could not read {summary}: {e}\n"
    with open(os.path.join(out, "prediction.json"), "w") as f:
        json.dump(record, f, indent=1)
    return ("## Predicted from independent figures\n\n"
            "`tools/predict_paper.py`: H100 CC copy costs from the ISPASS 2025 artifact, one core's AES-256-GCM "
            "rate, and our emulated GPT-2-XL TEE-off step; no figure comes from the paper's results "
            "(docs/reproducing.md, \"Predicting the paper\"). The platform table predicts the same run on the "
            "modes NVIDIA ships, from tools/calibration/platforms.json (\"Platforms after H100\").\n\n```\n"
            + text + "\n```\n")


def run_specs(args, out, specs, tag):
    """Makes each run of a study (scenarios, algorithms) once, printing its step time."""
    planned = make_planned(args, out, specs, tag)
    for r in specs:
        summary, _, dt = run_one(args, r, out)
        dt = planned.get(r["id"], dt)
        if summary is not None:
            with open(summary) as f:
                step = json.load(f)["step_s_mean"]
            print(f"  [{tag}] {r['id']}: {step:.3f} s/step" + (f" ({dt:.0f} s)" if dt else " (cached)"), flush=True)


def study_selected(args, emulate_ok, name, in_quick=True):
    """Whether a study runs: emulated compute available, not left out by --only, and (for a study too long
    for the quick grid) asked for by name there."""
    keep = set(args.only.split(",")) if args.only else None
    if not emulate_ok or args.no_emulate or (keep is not None and name not in keep):
        return False
    return in_quick or not args.quick or keep is not None


def paper_fit_toll(args, out, independent):
    """paper-fit's per-crossing cost (us), solved from the hardware scenario's TEE-off run (made if not
    there yet, but not by a dry run, which plans nothing that needs its number), or None (no run; or one
    bucket: nothing for bucket tuning to remove)."""
    hw_off = scenarios.specs(independent, args.scenario_model)[0]
    path = os.path.join(out, "runs", hw_off["id"] + ".json")
    if not os.path.exists(path) and not args.dry_run:
        run_specs(args, out, [hw_off], "scenario")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return scenarios.paper_toll_us(json.load(f), PAPER)


def run_scenarios(args, out, emulate_ok):
    """The named scenarios (tools/scenarios.py): GPT-2-XL on 4 emulated H100s under each open assumption
    of the paper's set-up; paper-fit last, its per-crossing cost solved from the hardware scenario's
    TEE-off run. Returns the report's section ("" when not run)."""
    if not study_selected(args, emulate_ok, "scenarios"):
        return ""
    independent = round(predict_paper.independent_crossing_us(), 1)
    specs = scenarios.specs(independent, args.scenario_model)
    toll = None
    for phase in ("independent", "paper-fit"):
        if phase == "paper-fit":
            toll = paper_fit_toll(args, out, independent)
            if toll is None:
                break
            specs = scenarios.paper_specs(toll, args.scenario_model)
        run_specs(args, out, specs, "scenario")
    if args.dry_run:
        return ""
    every = scenarios.specs(independent, args.scenario_model) + (
        scenarios.paper_specs(toll, args.scenario_model) if toll else [])
    return scenarios.section(scenarios.load_results(out, every), PAPER, PAPER_SRC, toll, args.scenario_model)


def algo_study_args(args):
    """The collectives study's grid from the command line: (hardware cost us, model, ranks, costs, sweep P)."""
    ranks = tuple(int(x) for x in args.algo_ranks.split(","))
    costs = tuple(float(x) for x in args.algo_costs_us.split(","))
    sweep_p = args.algo_sweep_p or max(ranks)
    return round(predict_paper.independent_crossing_us(), 1), args.algo_model, ranks, costs, sweep_p


def run_algo_study(args, out, emulate_ok):
    """The collectives study (tools/algo_study.py): cc with ring, rhd and auto as P and the per-crossing
    cost grow. Full grid and `--only algorithms`. Returns (the report's section, figure name or None)."""
    if not study_selected(args, emulate_ok, "algorithms", in_quick=False):
        return "", None
    grid_args = algo_study_args(args)
    specs = algo_study.specs(*grid_args)
    run_specs(args, out, specs, "algorithms")
    if args.dry_run:
        return "", None
    res = algo_study.load_results(out, specs)
    return algo_study.section(res, *grid_args), algo_study.figure(res, out, *grid_args)


# --- The sharding study (tools/shard_study.py): `--only sharding`, kept apart from the grid. ---
def shard_study_grid(args):
    """(hardware per-crossing cost us, models, ranks, the bucket sweep's (model, P) or None) of the sharding
    study from the command line."""
    models = tuple(m for m in args.shard_models.split(",") if m)
    ranks = tuple(int(x) for x in args.shard_ranks.split(","))
    sweep = None
    if args.shard_sweep:
        model, _, P = args.shard_sweep.partition(":")
        sweep = (model, int(P))
    return round(predict_paper.independent_crossing_us(), 1), models, ranks, sweep


def run_shard_study(args, out, emulate_ok):
    """DDP and ZeRO-1, ZeRO-2 and ZeRO-3 under off, cc and fast (tools/shard_study.py), where a rank fits the emulated
    GPU, and the bucket sweep. Only with `--only sharding` (a long study: P = 8 to 64 of paper-size
    models). Returns the report's section ("" when not run) and its figure (or None)."""
    if not study_selected(args, emulate_ok, "sharding", in_quick=False) or not args.only:
        return "", None
    hardware_us, models, ranks, sweep = shard_study_grid(args)
    memory = {}

    def fits(m, P, stage):
        seq = min(args.emu_seq, CONTEXT.get(m, args.emu_seq))
        batch = shard_study.MODEL_BATCH.get(m, args.emu_batch)
        memory[(m, P, stage)] = shard_study.rank_memory(args.bin, m, P, stage, batch, seq)
        return memory[(m, P, stage)][1]

    buckets = tuple(float(b) for b in args.shard_buckets.split(",") if b)
    buckets = tuple(int(b) if b.is_integer() else b for b in buckets)  # ids and flags as 25, not 25.0
    specs = shard_study.specs(hardware_us, models, ranks, fits, sweep, buckets)
    skipped = [(m, P, st, gib) for (m, P, st), (gib, ok) in memory.items() if not ok]
    names = tuple(n for n in args.shard_scenarios.split(",") if n)
    toll = paper_fit_toll(args, out, hardware_us) if "paper-fit" in names else None
    specs += shard_study.scenario_specs(hardware_us, toll, names, models, ranks, fits)
    run_specs(args, out, specs, "sharding")
    if args.dry_run:
        return "", None
    res, every = shard_study.load_results(out, specs)
    scen = shard_study.load_scenarios(out, specs, res, names)
    return (shard_study.section(res, hardware_us, models, ranks, every, skipped, sweep, buckets, scen, toll),
            shard_study.figure(res, every, out, models, ranks, sweep, buckets))


def report(args, out, recs, model_text, scenario_text="", algo_text="", algo_fig=None, shard_text="",
           shard_fig=None):
    variants = TEE_MODES
    toll = args.cc_transfer_us
    cal = getattr(args, "calibration", None)
    toll_text = (
        f"H100 CC per-transfer cost: `--cc-transfer-us {toll:g}` on every emulated run — each CPU-sealed ring "
        "message waits this long for its device → host bounce-buffer crossing before it is sealed and its "
        "host → device crossing after it is opened, one crossing at a time per rank (secure copies are "
        "synchronous and serialised). "
        + ("Independent of the paper: what H100 CC adds to one synchronous host↔device copy, mean of the two "
           "directions, fitted to the ISPASS 2025 artifact's bandwidthTest sweeps (tools/calibration/, "
           "`tools/predict_paper.py`). " if args.toll_source == "ispass" else "")
        + (f"Derived from the paper's own figures ({PAPER_SRC}: GPT-2-XL on 4 GPUs, 41.6x with 25 MB buckets, "
           f"3.03x with larger ones, put down to the number of round trips): (41.6 − 3.03) × our emulated "
           f"gpt2-xl TEE-off step ({cal['gpt2_xl_off_step_s']:.3f} s, measured at P=1) / ({cal['crossings_per_bucket']} "
           f"crossings per bucket × ({cal['buckets_25mib']} − 1) buckets), assuming the tuned run used one "
           f"bucket; `calibration.json`. That is far more than a copy's set-up on the hardware, so it stands for "
           "every per-message cost of the paper's set-up, not for H100 CC alone. "
           if cal and args.toll_source == "paper" else "")
        + (f"PAPER-FITTED: the number given is within {100 * PAPER_FIT_SHARE:.0f}% of the cost solved from the "
           f"paper's own figures ({PAPER_SRC}: 41.6x -> 3.03x) on today's emulator, {cal['cc_transfer_us']:g} us "
           f"(`calibration.json`; `--cc-transfer-us paper` uses it): derived from the paper's results, not measured. "
           if cal and args.toll_source == "paper-fitted" else "")
        + ("Given on the command line: neither ISPASS 2025's figure nor the paper-fitted cost "
           f"({cal['cc_transfer_us']:g} us on today's emulator); not a measurement. "
           if cal and args.toll_source == "given" else "")
        + "Without it (`cc-own` in the bucket table, `--cc-transfer-us 0`) teetrain's sealing has no per-message "
          "cost to speak of and the bucket size hardly matters.\n"
        if toll > 0 else
        "H100 CC per-transfer cost: off (`--cc-transfer-us 0`): cc pays teetrain's own sealing only.\n")
    emu_gpu = next((r.get("gpu") for r in recs if r.get("gpu")), f"--gpu {args.gpu}")
    parts = [f"# GPU-TEE DDP overhead study — teetrain reproduction\n",
             f"Grid: {'quick' if args.quick else 'full'}, {len(recs)} runs, {args.warmup} warm-up + {args.steps} timed "
             f"steps each for emulated runs, {10 * args.steps} for real-compute runs; emulated compute: `--gpu {args.gpu}` "
             f"{BASELINES[args.gpu_baseline][1]}, batch "
             f"{args.emu_batch} x {args.emu_seq}. Step times are `step_s_mean` of each run's summary "
             f"(mean over the timed steps, rank 0's clock)"
             + (f"; real-compute runs were made {args.repeats} times and the median run is the one shown (every "
                f"repeat's step time: `step_s_repeats` in runs.csv)" if args.repeats > 1 else "")
             + ". Raw data: `runs.jsonl`, `runs.csv`. Guide: docs/reproducing.md.\n",
             "Emulated runs are in virtual time (docs/design.md §11): every cost is computed for the modelled platform, "
             "never measured, so their numbers are the same on any machine. Forward/backward cost what FLOPs and "
             "activation bytes take "
             f"(emulated GPU: {emu_gpu}; a roofline whose two figures were measured with teetrain's CUDA backend "
             "on an H200, docs/reproducing.md), the optimizer its memory bandwidth, and in `fast` (device crypto) the sealing of gradients the GPU AES-GCM rate of "
             "the `--gpu` table (measured with `bench_gpu_aead`). `cc` seals on a modelled host, as H100 CC's "
             "bounce buffers do: 3.36 GB/s per core (ISPASS 2025, tools/calibration/), every message a real sealed "
             "token. " + (
                 "Links: every ring message costs its bytes at the GPU's NVLink rate (or `--link-gbps`); the ring's adds "
                 "and averaging cost the GPU's memory bandwidth.\n"
                 if args.link == "emulate" else
                 "Links: `--link real` — every ring message moves through this host's memory, plaintext included "
                 "(on a small machine that costs about as much as the crypto, which flattens the trends).\n"),
             toll_text]
    by_p = lambda k, label=False: (f"{k[0]} P={k[1]}" if label else k[1])
    by_model = lambda k, label=False: next((r.get("num_params", 0) for r in recs if r["run"]["model"] == k[0]), 0) \
        if not label else k[0]
    by_bucket = lambda k, label=False: (("whole model" if k[2] == 0 else f"{k[2]:g} MiB") if label
                                        else (1e6 if k[2] == 0 else k[2]))
    by_overlap = lambda k, label=False: (f"overlap {k[3]}" if label else k[3])
    # Note: virtual-time results and wall-clock measurements never share a section or a check: the first
    # are a function of the workload and the modelled platform, the same on any machine and load
    # (report-virtual.md holds them alone, byte for byte), the second vary with this machine's load.
    wall = [r for r in recs if r.get("time") != "virtual"]
    recs = [r for r in recs if r.get("time") == "virtual"]
    parts.append("# Part 1: virtual-time results\n\nComputed for the modelled platform (docs/design.md §11): "
                 "the same, byte for byte, on any machine and at any load (`report-virtual.md` holds this part "
                 "alone). Wall-clock measurements are in Part 2, with checks of their own.\n")
    secs = {}
    wall_parts = []
    for group, title, kname, kfn, fig, xlabel, logx in [
            ("ranks", "Slowdown vs ranks (real CPU compute)", "run", by_p, "fig_ranks", "ranks P", False),
            ("ranks-emu", "Slowdown vs ranks (emulated GPU compute)", "run", by_p, "fig_ranks_emu", "ranks P", False),
            ("model-size", "Slowdown vs model size (P=4, emulated GPU compute)", "model", by_model, "fig_model_size",
             "parameters", True),
            ("families", "The paper's three families: BERT and ResNet beside GPT-2 (P=4, emulated)", "model", by_model,
             None, "", False),
            ("buckets", "Slowdown vs bucket size (gpt2, P=4, emulated)", "bucket", by_bucket, "fig_buckets",
             "bucket MiB (rightmost: whole model)", True),
            ("overlap", "Overlap of all-reduce with backward (gpt2, P=4, emulated)", "overlap", by_overlap, None, "", False)]:
        measured = group == "ranks"  # real CPU compute, timed by the wall clock
        text, series = slowdown_section(wall if measured else recs, group, title, kname, kfn,
                                        variants + (["cc-own"] if group == "buckets" else []))
        if text:
            (wall_parts if measured else parts).append(text)
            if fig:
                secs[fig] = (title, xlabel, series, logx)
    # Ablation.
    abl = [r for r in recs if "ablation" in r["run"]["groups"]]
    if abl:
        off = next((r["step_s_mean"] for r in abl if r["run"]["variant"] == "off"), None)
        cc = next((r["step_s_mean"] for r in abl if r["run"]["variant"] == "cc"), None)
        rows = []
        for v in ["off"] + [a for a, _ in ABLATION]:
            r = next((x for x in abl if x["run"]["variant"] == v), None)
            if r:
                s = r["step_s_mean"]
                removed = f"{100 * (cc - s) / (cc - off):.0f}%" if off and cc and cc > off else "-"
                rows.append([v, f"{s:.3f}", fmt_x(s, off), removed])
        parts.append(f"## Ablation of fast's switches ({abl[0]['run']['model']}, P=4, emulated)\n\n"
                     + md_table(["variant", "s/step", "slowdown vs off", "share of cc overhead removed"], rows) + "\n")
    # Beside the paper: its 8.68x averages its ResNet, BERT and GPT-2 runs on 4 GPUs; ours averages every
    # emulated P=4 model of the model-size and families groups.
    ms = slowdowns(recs, "model-size")
    every = {**ms, **slowdowns(recs, "families")}
    cc_x = [d["cc"] / d["off"] for d in every.values() if "cc" in d and "off" in d]
    fast_x = [d["fast"] / d["off"] for d in every.values() if "fast" in d and "off" in d]
    fams = sorted({k[0].split("-")[0].rstrip("0123456789") for k, d in every.items() if "cc" in d and "off" in d})
    big = max(ms, key=lambda k: by_model(k), default=None)
    bk = slowdowns(recs, "buckets")
    best = min((d["cc"] / d["off"] for d in bk.values() if "cc" in d and "off" in d), default=None)
    best_f = min((d["fast"] / d["off"] for d in bk.values() if "fast" in d and "off" in d), default=None)
    g = lambda x: f"{x:.2f}x" if x else "-"
    rows = [[f"mean slowdown, 4 ranks ({len(cc_x)} models: {', '.join(fams) or '-'})", f"{PAPER['mean_4gpu']}x", g(sum(cc_x) / len(cc_x) if cc_x else None),
             g(sum(fast_x) / len(fast_x) if fast_x else None)],
            [f"largest model, 4 ranks (paper: GPT-2-XL; ours: {big[0] if big else '-'})", f"{PAPER['gpt2_xl_4gpu']}x",
             g(ms[big]["cc"] / ms[big]["off"] if big and "cc" in ms[big] and "off" in ms[big] else None),
             g(ms[big]["fast"] / ms[big]["off"] if big and "fast" in ms[big] and "off" in ms[big] else None)],
            ["after bucket tuning (best bucket)", f"{PAPER['gpt2_xl_tuned']}x", g(best), g(best_f)]]
    parts.append("## Beside the paper\n\n" + md_table(["figure", f"paper ({PAPER_SRC})", "teetrain cc", "teetrain fast"],
                                                    rows)
                 + "\n\nThe emulated slowdowns are the modelled platform's (virtual time), not this machine's: they "
                   "follow from the modelled host (3.36 GB/s of AES-GCM per core, `--host-crypto-cores`) and the "
                   "per-crossing cost, which the paper does not state; compare the trends (growth with P and model "
                   "size, shrinkage with bucket size) and the cc→fast gap, and the Scenarios for the absolute "
                   "numbers.\n")
    parts.append(scenario_text)
    parts.append(algo_text)
    parts.append(shard_text)  # the sharding study (tools/shard_study.py)
    parts.append(prediction_section(out))
    parts.append(checks_section(recs, out, "virtual time", scaling_model=False))
    with open(os.path.join(out, "report-virtual.md"), "w") as f:
        f.write("\n".join(parts))
    parts.append("# Part 2: wall-clock measurements\n\nMeasured on this machine as loaded when they ran: "
                 + (f"{len(wall)} runs (real CPU compute), each made {args.repeats} time(s); the spread of the "
                    "repeats is `step_s_repeats` in runs.csv" + spread_text(wall) if wall else
                    "none in this grid (`--wall-clock` makes the real-compute runs)")
                 + ". The scaling model is fitted to every run, measured ones included, so its check is here.\n")
    parts += wall_parts
    parts.append(checks_section(wall, out, "wall clock", scaling_model=True))
    made, note = figures(out, recs + wall, secs)
    made += [f for f in (algo_fig, shard_fig) if f]
    if made:
        parts.append("## Figures\n\n" + "\n".join(f"![{m}]({m}.png)" for m in made) + "\n")
    elif note:
        parts.append("## Figures\n\n" + note + "\n")
    if model_text:
        parts.append("## Scaling model (`teetrain model`)\n\n```\n" + model_text.rstrip() + "\n```\n")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/reproduce", help="output directory")
    ap.add_argument("--quick", action="store_true", help="small grid, 3 steps per run (about 15 s on 2 cores; "
                    "docs/reproducing.md, \"Many runs in one process\")")
    ap.add_argument("--bin", default="build/teetrain", help="the teetrain binary")
    ap.add_argument("--data", default="data-cache/fortunes", help="token shards (prepared with `teetrain prepare-text`)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per run (default 3 quick / 10 full)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up steps before the timed ones (--timing-warmup)")
    ap.add_argument("--batch", type=int, default=1, help="batch per rank for real-compute runs (default 1: CPU "
                    "compute is slow, and a small batch keeps these runs communication-bound like DDP on GPUs)")
    ap.add_argument("--seq", type=int, default=64, help="sequence length for real-compute runs")
    ap.add_argument("--emu-batch", type=int, default=4, help="batch per rank for emulated runs (default 4: the "
                    "batch at which the emulated GPU was checked against real H200 runs)")
    ap.add_argument("--emu-seq", type=int, default=1024, help="sequence length for emulated runs (BERT: at most 512)")
    ap.add_argument("--image-data", default="fashion-mnist", help="image set for the ResNet rows (teetrain train "
                    "--data; the only one Debian ships is Fashion-MNIST, 1x28x28)")
    ap.add_argument("--image-batch", type=int, default=128, help="images per rank for the ResNet rows")
    ap.add_argument("--gpu", default="h100", help="emulated GPU (teetrain train --gpu)")
    ap.add_argument("--gpu-baseline", choices=list(BASELINES), default="teetrain",
                    help="the TEE-off step emulated runs model (teetrain train --gpu-baseline): teetrain's own "
                    "kernels, or fused-attention, the PyTorch-class step of the published studies (attention one "
                    "fused kernel, fitted to PyTorch 2.11's fused GPT-2 steps); the report names it")
    ap.add_argument("--link-gbps", type=float, default=0, help="throttle each ring link to this many GB/s (0 = off; "
                    "with --link emulate: the emulated GPU's NVLink)")
    ap.add_argument("--link", choices=["emulate", "real"], default="emulate",
                    help="emulated-compute runs: 'emulate' models the GPUs' plaintext transfers and adds as waits "
                    "(NVLink, HBM) instead of moving synthetic gradients through this host's memory; CPU-sealed "
                    "(cc) messages move for real either way (default: emulate)")
    ap.add_argument("--ingress-gbps", type=float, default=0, help="throttle ingress to this many GB/s (0 = off)")
    ap.add_argument("--cc-transfer-us", default="ispass",
                    help="emulated runs: fixed cost of one H100 CC bounce-buffer crossing of a CPU-sealed ring "
                    "message (teetrain train --cc-transfer-us). 'ispass' (default): independent of the paper, what "
                    "CC adds to one synchronous copy on an H100 (ISPASS 2025 artifact, tools/calibration/); "
                    "'paper': fitted to Lee et al.'s own 41.6x -> 3.03x with one calibration run of gpt2-xl (it "
                    "cannot confirm what it was fitted to); a number: that many us; 0: none")
    ap.add_argument("--only", default="", help="comma-separated groups to run (scenarios, algorithms, sharding, ranks, ranks-emu, "
                                               "model-size, families, buckets, overlap, ablation)")
    ap.add_argument("--no-emulate", action="store_true", help="skip the emulated-compute groups")
    ap.add_argument("--wall-clock", action="store_true", help="also make the real-compute runs (the 'ranks' group: "
                    "CPU compute timed by the wall clock, Part 2 of the report; several seconds a run). Without it "
                    "(or --only ranks, or --no-emulate) the grid is the virtual-time runs alone")
    ap.add_argument("--scenario-model", default=scenarios.MODEL, help="the model of the named scenarios "
                    "(default gpt2-xl, the paper's; tools/scenarios.py)")
    ap.add_argument("--algo-model", default=algo_study.MODEL, help="the collectives study's model (default gpt2; "
                    "tools/algo_study.py; runs in the full grid and with --only algorithms)")
    ap.add_argument("--algo-ranks", default=",".join(map(str, algo_study.RANKS)), help="the collectives study's "
                    "ranks (default 2,4,8,16)")
    ap.add_argument("--algo-costs-us", default=",".join(f"{c:g}" for c in algo_study.COSTS_US),
                    help="the collectives study's per-crossing costs beyond the hardware's, us (the last is the P "
                    "sweep's high end; default 250,1000,2000,4000,8000)")
    ap.add_argument("--algo-sweep-p", type=int, default=algo_study.SWEEP_P, help="ranks of the collectives study's "
                    "cost sweep (default 8; 0: the largest of --algo-ranks)")
    ap.add_argument("--shard-models", default=",".join(shard_study.MODELS), help="the sharding study's models "
                    "(tools/shard_study.py; runs with --only sharding)")
    ap.add_argument("--shard-ranks", default=",".join(map(str, shard_study.RANKS)), help="the sharding study's "
                    "ranks (default " + ",".join(map(str, shard_study.RANKS)) + "; 8,16,64,1024 adds P = 64 and "
                    "1,024, each a folded ring of 8 virtual ranks, off and cc)")
    ap.add_argument("--shard-sweep", default=shard_study.SWEEP, help="MODEL:P of the sharding study's bucket "
                    "(unit-size) sweep, off and cc (default " + shard_study.SWEEP + "; empty: none)")
    ap.add_argument("--shard-scenarios", default=",".join(shard_study.SCENARIOS), help="named scenarios "
                    "(tools/scenarios.py) the sharding study's cc rows of DDP, ZeRO-1 and ZeRO-3 also run under, "
                    "of those that change cc's costs alone: " + ", ".join(
                        n for n, *_ in scenarios.SCENARIOS if scenarios.changes_cc_only(n)) + " (default "
                    + ",".join(shard_study.SCENARIOS) + ", paper-fit's cost solved from the scenario model's "
                    "TEE-off run at P = 4 and labelled as derived from the paper; empty: none)")
    ap.add_argument("--shard-buckets", default=",".join(map(str, shard_study.BUCKETS)), help="bucket sizes of "
                    "the sharding study's sweep, MiB (default " + ",".join(map(str, shard_study.BUCKETS)) + ")")
    ap.add_argument("--repeats", type=int, default=1, help="make each real-compute run this many times and "
                    "keep the median (default 1; emulated runs are in virtual time, the same every time)")
    ap.add_argument("--force", action="store_true", help="re-run runs whose summary already exists")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    ap.add_argument("--report-only", action="store_true", help="run nothing: write runs.jsonl/csv, the model "
                    "and report.md from the runs already in --out (e.g. a grid that was cut short)")
    ap.add_argument("--run-timeout", type=float, default=900, help="seconds before one run counts as failed")
    args = ap.parse_args()
    cc_only = [n for n, *_ in scenarios.SCENARIOS if scenarios.changes_cc_only(n)]
    unknown = [n for n in args.shard_scenarios.split(",") if n and n not in cc_only]
    if unknown:
        ap.error(f"--shard-scenarios: {','.join(unknown)} is not a scenario that changes cc's costs alone; "
                 f"use some of {','.join(cc_only)}")
    args.steps = args.steps or (3 if args.quick else 10)
    if args.report_only:
        args.force = False  # nothing is re-run: every summary that is there is used
    if args.repeats < 1:
        sys.exit("reproduce: --repeats must be at least 1")
    out = args.out
    for d in ("runs", "logs"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    if not os.path.exists(args.bin):
        sys.exit(f"reproduce: {args.bin} not found; build it first (cmake --preset release && cmake --build --preset release)")
    if not args.dry_run and not any(os.path.exists(p) for p in (args.data, args.data + "_train.bin")):
        print(f"reproduce: preparing {args.data} with `teetrain prepare-text`", flush=True)
        subprocess.check_call([args.bin, "prepare-text", "--out", os.path.dirname(args.data) or ".",
                               "--name", os.path.basename(args.data)])
    help_text = subprocess.run([args.bin, "train", "--help"], capture_output=True, text=True).stdout
    emulate_ok = "--compute" in help_text and not args.no_emulate
    if not emulate_ok and not args.no_emulate:
        print("reproduce: WARNING: this teetrain has no --compute emulate; only the real-compute groups run",
              file=sys.stderr)
    only = set(args.only.split(",")) if args.only else set()
    runs = grid(args.quick, emulate_ok, wall_clock=args.wall_clock or "ranks" in only or not emulate_ok)
    if not image_data_present(args.image_data):
        print(f"reproduce: no image data at {args.image_data} (apt-get install fashion-mnist, or --image-data): "
              "the ResNet rows are left out", file=sys.stderr)
        runs = [r for r in runs if not r["model"].startswith(IMAGE_PREFIX)]
    if args.only:
        keep = set(args.only.split(","))
        runs = [r for r in runs if r["groups"] & keep]
    args.calibration = None
    args.toll_source = args.cc_transfer_us if args.cc_transfer_us in ("paper", "ispass") else "given"
    if args.cc_transfer_us in ("paper", "ispass"):
        args.cc_transfer_us = 0.0  # the calibration run itself has TEE off
        # --report-only reads a calibration that is there (calibrate_transfer returns it) and makes none.
        have_cal = os.path.exists(os.path.join(out, "calibration.json"))
        if (emulate_ok and any(r["emulate"] for r in runs) and not args.dry_run
                and (have_cal or not args.report_only)):
            args.calibration = calibrate_transfer(args, out)
            args.cc_transfer_us = args.calibration["cc_transfer_us"]
        if args.toll_source == "ispass":
            args.cc_transfer_us = round(predict_paper.independent_crossing_us(), 1)
        if args.cc_transfer_us > 0:
            print(f"reproduce: H100 CC per-transfer cost {args.cc_transfer_us:g} us ("
                  + ("from the paper's figures, calibration.json" if args.toll_source == "paper" else
                     "independent: ISPASS 2025 artifact, tools/calibration/") + ")", flush=True)
    else:
        try:
            args.cc_transfer_us = float(args.cc_transfer_us)
        except ValueError:
            sys.exit(f"reproduce: --cc-transfer-us {args.cc_transfer_us!r}: give 'paper', 'ispass' or a number of "
                     "microseconds")
        label_given_toll(args, out, runs, emulate_ok)
        if args.cc_transfer_us < 0:
            sys.exit("reproduce: --cc-transfer-us must be >= 0")
    if not args.dry_run and not args.report_only:
        # One certified device identity per rank of the widest run, the studies' included
        # (idempotent: issues missing ones).
        widest = [scenarios.RANKS] + [r["P"] for r in runs]
        if study_selected(args, emulate_ok, "algorithms", in_quick=False):
            _, _, ranks, _, sweep_p = algo_study_args(args)
            widest += list(ranks) + [sweep_p]
        if study_selected(args, emulate_ok, "sharding", in_quick=False):
            _, _, ranks, sweep = shard_study_grid(args)
            widest += list(ranks) + ([sweep[1]] if sweep else [])
        subprocess.check_call([args.bin, "provision", "--out", os.path.join(out, "vendor"),
                               "--devices", str(max(widest))],
                              stdout=subprocess.DEVNULL)
    print(f"reproduce: {len(runs)} runs -> {out}", flush=True)
    recs = []
    t_start = time.time()
    planned = make_planned(args, out, runs, "grid")
    for i, r in enumerate(runs, 1):
        rec, cmd, dt, steps = run_repeated(args, r, out)
        dt = planned.get(r["id"], dt)
        if rec is None:
            continue
        rec["variant"] = r["variant"]
        rec["run"] = dict(r, groups=sorted(r["groups"]), cmd=" ".join(shlex.quote(c) for c in cmd),
                          step_s_repeats=steps)
        recs.append(rec)
        print(f"  [{i}/{len(runs)}] {r['id']}: {rec['step_s_mean']:.3f} s/step"
              + (f" (median of {', '.join(f'{x:.3f}' for x in steps)})" if len(steps) > 1 else "")
              + (f" ({dt:.0f} s)" if dt else " (cached)"), flush=True)
    if args.dry_run:
        return
    for rec in recs:
        rec["run"]["groups"] = set(rec["run"]["groups"])
    with open(os.path.join(out, "runs.jsonl"), "w") as f:
        for rec in recs:
            f.write(json.dumps(dict(rec, run=dict(rec["run"], groups=sorted(rec["run"]["groups"])))) + "\n")
    rows = [flat(r) for r in recs]
    cols = sorted({k for row in rows for k in row}, key=lambda k: (k.startswith(("phase_", "counter_")), k))
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    scenario_text = run_scenarios(args, out, emulate_ok)
    algo_text, algo_fig = run_algo_study(args, out, emulate_ok)
    shard_text, shard_fig = run_shard_study(args, out, emulate_ok)
    model_text = ""
    top_help = subprocess.run([args.bin, "--help"], capture_output=True, text=True).stdout
    if recs and re.search(r"^\s+model\s", top_help, re.M):
        p = subprocess.run([args.bin, "model", "--runs", out, "--json", os.path.join(out, "model.json")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write("reproduce: `teetrain model` FAILED:\n" + p.stdout[-2000:] + p.stderr[-2000:])
            sys.exit(1)
        model_text = p.stdout
    report(args, out, recs, model_text, scenario_text, algo_text, algo_fig, shard_text=shard_text,
           shard_fig=shard_fig)
    print(f"reproduce: done in {time.time() - t_start:.0f} s; report: {os.path.join(out, 'report.md')}")


if __name__ == "__main__":
    main()
