"""Named scenarios of the paper's set-up, run on the virtual-time emulator, and what the paper's own
pair of numbers implies (the inverse analysis). Used by tools/reproduce.py (its "Scenarios" section).

Lee et al. (arXiv 2501.11771) leave open how their host sealed, with how many threads, at which
precision and batch. Each scenario below is one answer, built from independent, sourced figures
(tools/calibration/h100_cc_sources.json); the last, `paper-fit`, is derived from the paper's results
and labelled so. Every scenario runs GPT-2-XL on 4 emulated H100s, TEE off and cc, with DDP's 25 MiB
buckets and with one bucket for the whole model (the paper's "larger buckets"), in virtual time: its
numbers are the modelled platform's, the same on any machine.
"""
import predict_paper
import study_runs

MODEL = "gpt2-xl"
RANKS = 4
# (name, what it assumes, derived from the paper's results?, flags of every run, flags of the cc runs,
# batch per rank or None for reproduce.py's --emu-batch)
SCENARIOS = [
    ("hardware", "the lead: H100 CC as ISPASS 2025 measured it (--cc-hardware h100-pageable: each crossing "
     "35.2 us and its bytes at the pageable copy plateau, +5.05 us per kernel launch, the batch through the "
     "bounce buffers) and one 3.36 GB/s host core per GPU",
     False, [], [], None),
    ("bounce-reencrypt", "as hardware, and the bounce buffers' bytes encrypted a second time on the host "
     "(Fastrack's redundant re-encryption)", False, [], ["--bounce-reencrypt"], None),
    ("host-threads", "as hardware, with 4 host cores per GPU sealing a pipelined ring's segments",
     False, [], ["--tee-pipeline", "on", "--crypto-threads", "4"], None),
    ("bf16-batch8", "as hardware, with a BF16 baseline at batch 8 per GPU (twice the tokens per step; its "
     "memory is checked against 80 GB below)", False, ["--gpu-precision", "bf16"], [], 8),
    ("paper-fit", "PAPER-FITTED: per-crossing cost solved from the paper's 41.6x -> 3.03x (DERIVED FROM THE "
     "RESULTS), on the paper's own set-up: emulated CC, no CC hardware costs (--cc-hardware none)",
     True, [], [], None),
]


# What each scenario assumes, in the closed form of tools/predict_paper.py (predict_paper.predict): the
# bounce buffers' bytes through the cipher a second time, and the host cores sealing for one GPU. The
# same assumptions drive the emulated runs above (--bounce-reencrypt; --crypto-threads 4 on a pipelined
# ring), so the two computations of one scenario must agree: a check of the emulator, not of the paper.
CLOSED_FORM = {
    "hardware": dict(bounce=False, threads=1, copies=True),
    "bounce-reencrypt": dict(bounce=True, threads=1, copies=True),
    "host-threads": dict(bounce=False, threads=4, copies=True),
    "bf16-batch8": dict(bounce=False, threads=1, copies=True),  # its own TEE-off step: BF16 at batch 8
    "paper-fit": dict(bounce=False, threads=1, copies=False),
}
# The CC hardware of every independent scenario (teetrain train --cc-hardware; docs/reproducing.md).
CC_HARDWARE = "h100-pageable"


def closed_form(name, run, toll_us=None, ranks=RANKS):
    """(slowdown with 25 MiB buckets, with one bucket) of a scenario by predict_paper's closed form, from
    the figures of the scenario's TEE-off run (predict_paper.figures_of: step, backward, gradient bytes,
    buckets); toll_us replaces the hardware's per-crossing cost (paper-fit)."""
    src, costs = predict_paper.load_sources()
    crossing = {"d2h": dict(costs["page_d2h"]), "h2d": dict(costs["page_h2d"])}
    if toll_us is not None:
        for c in crossing.values():
            c["added_fixed_us"] = toll_us
    a = CLOSED_FORM[name]
    return predict_paper.predict(run["t_off"], run["t_backward"], run["grad_bytes"], run["buckets"], ranks,
                                 src["cpu_aes256gcm_gbps"]["value"], crossing, a["bounce"], a["threads"], a["copies"])


GPU_GIB = 80e9 / 2 ** 30  # an H100's 80 GB, in GiB (summaries give memory_gib_per_rank)


def memory_text(results):
    """Each TEE-off run's memory per GPU against 80 GB, and the largest batch that fits: memory is state
    (per parameter: the summary's memory_state_gib_per_rank) plus activations (per sample), so one run
    gives both parts."""
    parts = []
    for name, *_ in SCENARIOS:
        s = results.get(name, {}).get("off_summary")
        if not s or "memory_state_gib_per_rank" not in s:
            continue
        state = s["memory_state_gib_per_rank"]
        batch = s["config"]["batch"]
        per_sample = (s["memory_gib_per_rank"] - state) / batch
        largest = int((GPU_GIB - state) / per_sample) if per_sample > 0 else None
        parts.append(f"{name} {s['memory_gib_per_rank']:.1f} GiB at batch {batch} ("
                     + ("fits" if s["memory_gib_per_rank"] <= GPU_GIB else "DOES NOT FIT")
                     + (f"; the largest batch that fits: {largest}" if largest is not None else "") + ")")
    return (f"Memory per GPU of the TEE-off runs, against an H100's 80 GB ({GPU_GIB:.1f} GiB): "
            + "; ".join(parts) + ".\n\n") if parts else ""


def crossings_per_bucket(P=RANKS):
    return 2 * 2 * (P - 1)  # a device -> host crossing before each seal, host -> device after each open


def paper_toll_us(off_summary, paper):
    """The per-crossing cost that makes the paper's pair hold: (41.6 - 3.03) x T_off = toll x crossings
    saved by one bucket (reproduce.py's calibrate_transfer, here from the hardware scenario's P = 4 run)."""
    t_off, buckets = off_summary["step_s_mean"], off_summary["buckets"]
    if buckets < 2:
        return None  # one bucket already: bucket tuning has nothing to remove
    return (paper["gpt2_xl_4gpu"] - paper["gpt2_xl_tuned"]) * t_off / (crossings_per_bucket() * (buckets - 1)) * 1e6


def specs(independent_us, model=MODEL):
    """Run specs (reproduce.py's shape) of every scenario but paper-fit, whose cost needs the hardware
    scenario's TEE-off run first (paper_specs)."""
    out = []
    for name, _, derived, every, cc, batch in SCENARIOS:
        if derived:
            continue
        for variant, bucket in (("off", 25), ("cc", 25), ("cc", 0)):
            if variant == "off" and not every and name != "hardware":
                continue  # the same TEE-off run as the hardware scenario's
            out.append(spec(name, variant, bucket, tee_args(name, variant, independent_us), batch, model))
    return out


def paper_specs(toll_us, model=MODEL):
    return [spec("paper-fit", v, b, tee_args("paper-fit", v, None, toll_us), None, model)
            for v, b in (("cc", 25), ("cc", 0))]


def tee_args(name, variant, independent_us, toll_us=None):
    """The TEE flags of a scenario's run under --tee VARIANT: the per-crossing cost (the independent
    figure on the CC hardware, or paper-fit's toll_us without it), the flags of every run and, under cc
    and fast, the scenario's own. Also tools/shard_study.py's, which runs its cc rows under scenarios."""
    _, _, derived, every, cc, _ = next(s for s in SCENARIOS if s[0] == name)
    cost = (["--cc-transfer-us", f"{toll_us:.1f}"] if derived else
            ["--cc-transfer-us", f"{independent_us:g}", "--cc-hardware", CC_HARDWARE])
    return ["--tee", variant] + cost + every + (cc if variant != "off" else [])


def changes_cc_only(name):
    """Whether a scenario changes cc's costs alone (no flags of every run, no batch of its own), so that
    another study's TEE-off runs serve as its baseline."""
    _, _, _, every, _, batch = next(s for s in SCENARIOS if s[0] == name)
    return not every and batch is None


def spec(name, variant, bucket, tee_args, batch, model):
    return dict(id=f"scenario-{name}-{model}-P{RANKS}-{variant}-b{bucket}", groups={"scenarios"}, model=model,
                P=RANKS, variant=variant, tee_args=tee_args, bucket=bucket, overlap="on", emulate=True, batch=batch)


def section(results, paper, paper_src, toll_us, model=MODEL):
    """The report's "Scenarios" section. results: {scenario: {"off": s, "cc25": s, "cc1": s, "off_summary":
    the TEE-off run's summary}} (load_results)."""
    rows, independent_25, independent_1, apart = [], [], [], []
    for name, what, derived, *_ in SCENARIOS:
        r = results.get(name, {})
        hw = results.get("hardware", {})
        off, off_summary = (r["off"], r["off_summary"]) if "off" in r else (hw.get("off"), hw.get("off_summary"))
        if not off or "cc25" not in r or "cc1" not in r:
            continue
        s25, s1 = r["cc25"] / off, r["cc1"] / off
        if not derived:
            independent_25.append(s25)
            independent_1.append(s1)
        c25, c1 = closed_form(name, predict_paper.figures_of(off_summary), toll_us if derived else None)
        if abs(c25 / s25 - 1) > 0.05:
            apart.append(name)
        rows.append(f"| {name} | {what} | {'yes' if derived else 'no'} | {s25:.2f}x | {s1:.2f}x | "
                    f"{c25:.2f}x / {c1:.2f}x |")
    if not rows:
        return ""
    text = (f"## Scenarios: the paper's set-up under each open assumption ({model}, P=4, emulated, virtual time)\n\n"
            "| scenario | assumes | derived from the paper? | cc, 25 MiB buckets | cc, one bucket | closed form "
            "(25 MiB / one bucket) |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
            "The last column computes each scenario a second way, by tools/predict_paper.py's closed form (per rank, "
            "2(P-1) hops per bucket, each sealed and opened on the host and crossing twice; communication under "
            "backward with 25 MiB buckets, after it with one) from the same TEE-off run: where the two agree, the "
            "emulator's ring, crossings and host model add up as the arithmetic says."
            + (f" Apart by more than 5%: {', '.join(apart)}. The closed form leaves out the links and the ring's "
               "adds (little beside the sealing of a large model, more on a small one), counts two crossings per "
               "hop and keeps every host core busy all the time; a pipelined ring (what lets several host cores share a hop) "
               "sends every 1 MiB segment as a message of its own, which crosses the bounce buffers on its own "
               "(the `stage` phase), and seals and opens a hop's segments in windows of --crypto-threads, one "
               "window after another, as the real ring does." if apart else "") + "\n\n")
    text += memory_text(results)
    if independent_25:
        text += (f"Over the independent scenarios: cc {min(independent_25):.2f}x–{max(independent_25):.2f}x with "
                 f"25 MiB buckets (paper: {paper['gpt2_xl_4gpu']}x) and {min(independent_1):.2f}x–"
                 f"{max(independent_1):.2f}x with one bucket (paper: {paper['gpt2_xl_tuned']}x). ")
    hw = results.get("hardware", {})
    if "off" in hw and toll_us:
        t_off = hw["off"]
        aes = predict_paper.load_sources()[0]["cpu_aes256gcm_gbps"]["value"]
        per_bucket = crossings_per_bucket()
        # With the paper-fit cost, how many buckets could the tuned run have kept and still be 3.03x?
        rest = (paper["gpt2_xl_tuned"] - 1) * t_off
        max_buckets = rest / (per_bucket * toll_us * 1e-6)
        text += (f"\n\n**What the paper's pair implies** ({paper_src}: {paper['gpt2_xl_4gpu']}x -> "
                 f"{paper['gpt2_xl_tuned']}x from bucket size alone): a fixed cost of {toll_us / 1e3:.2f} ms per "
                 f"bounce-buffer crossing, {2 * toll_us * 1e-6 / t_off:.3f} x the TEE-off step ({t_off * 1e3:.0f} ms) "
                 f"per ring hop (two crossings) — as long as moving {toll_us * 1e-6 * aes * 1e3:.0f} MB through one "
                 f"host core's AES-GCM ({aes:.2f} GB/s), and {toll_us / predict_paper.independent_crossing_us():.0f}x "
                 f"what H100 CC adds to one copy (ISPASS 2025). Even if all of the tuned run's 3.03x were crossings, "
                 f"it kept at most {max_buckets:.1f} buckets.\n")
    return text


def load_results(out, runs):
    """{scenario: {"off"|"cc25"|"cc1": step_s_mean, "off_summary": the TEE-off run's summary}} from the
    runs' summaries under OUT/runs."""
    res = {}
    for r, s in study_runs.summaries(out, runs):
        name = next(n for n, *_ in SCENARIOS if r["id"].startswith(f"scenario-{n}-"))
        key = "off" if r["variant"] == "off" else ("cc25" if r["bucket"] else "cc1")
        res.setdefault(name, {})[key] = s["step_s_mean"]
        if key == "off":
            res[name]["off_summary"] = s
    return res
