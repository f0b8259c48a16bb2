"""The sharding study: DDP against ZeRO-1 and ZeRO-2 (`teetrain train --shard none|optimizer|gradients`) under
a TEE, on emulated H100s in virtual time. Used by tools/reproduce.py (its "Sharding" section,
`--only sharding`).

ZeRO-1 and ZeRO-2 move the same bytes as DDP's ring all-reduce (a reduce-scatter per bucket, then an
all-gather of the updated parameters), but the all-gather leaves backward's shadow: it runs after the
optimizer, exposed, where DDP's all-gather half overlaps backward. Under confidential computing each
message also pays per crossing (H100 CC's bounce buffers), so whether sharding costs more or less than
DDP under `cc` is measured here, not assumed. Every run is the emulated platform in virtual time
(docs/design.md §11): the numbers of the modelled platform, the same on any machine.

Per model, P, TEE mode and stage: the step time, its slowdown over the same stage with TEE off, the
messages the gradient collectives sealed per step (summary counter ring_sealed: reduce-scatters,
all-gathers, the gradient norm's parts) and every byte rank 0 sealed per step (bytes_sealed: those
messages and the batches' ingress).
"""
import os

import study_runs

MODELS = ("gpt2", "gpt2-xl", "llama-3.2-1b", "llama-3-8b")
RANKS = (8, 16)
MODES = ("off", "cc", "fast")
STAGES = ("none", "optimizer", "gradients")
STAGE_NAMES = {"none": "DDP", "optimizer": "ZeRO-1", "gradients": "ZeRO-2"}
# The CC hardware of the cc and fast runs: H100 CC as ISPASS 2025 measured it (tools/scenarios.py's lead).
CC_HARDWARE = "h100-pageable"


def spec(model, P, mode, stage, hardware_us):
    tee = ["--tee", mode, "--shard", stage]
    if mode != "off":
        tee += ["--cc-transfer-us", f"{hardware_us:g}", "--cc-hardware", CC_HARDWARE]
    return dict(id=f"shard-{model}-P{P}-{mode}-{stage}", groups={"sharding"}, model=model, P=P, variant=mode,
                tee_args=tee, bucket=25, overlap="on", emulate=True, batch=None, stage=stage)


def specs(hardware_us, models=MODELS, ranks=RANKS):
    """Every run of the study, each made once (virtual time)."""
    return [spec(m, P, mode, stage, hardware_us) for m in models for P in ranks for mode in MODES
            for stage in STAGES]


def per_step(summary, counter):
    """A counter of rank 0 per step: the summaries count every step of the run, warm-up included."""
    v = summary.get("counters", {}).get(counter, 0)
    v = v[0] if isinstance(v, list) else v
    steps = summary.get("steps") or 1
    return v / steps


def load_results(out, runs):
    """{(model, P, mode, stage): (step_s, collective messages sealed per step, bytes sealed per step)}."""
    return {(r["model"], r["P"], r["variant"], r["stage"]):
            (s["step_s_mean"], per_step(s, "ring_sealed"), per_step(s, "bytes_sealed"))
            for r, s in study_runs.summaries(out, runs)}


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
    """One phrase per (model, P, mode): each stage's step over DDP's, and the collective messages it adds."""
    words = []
    for m in models:
        for P in ranks:
            for mode in MODES[1:]:
                ddp = res.get((m, P, mode, "none"))
                got = [(st, res[(m, P, mode, st)]) for st in STAGES[1:] if (m, P, mode, st) in res]
                if ddp is None or not got:
                    continue
                words.append(f"{m} P={P} {mode}: " + ", ".join(
                    f"{STAGE_NAMES[st]} {r[0] / ddp[0]:.3f}x DDP's step with {r[1] - ddp[1]:+.0f} messages"
                    for st, r in got))
    return words


def section(res, hardware_us, models=MODELS, ranks=RANKS):
    """The report's "Sharding" section (markdown; "" when no run is there)."""
    body = rows(res, models, ranks)
    if not body:
        return ""
    head = ["model", "P", "tee", "stage", "off ms/step", "ms/step", "over off", "over DDP (same tee)",
            "collective messages sealed/step", "MiB sealed/step"]
    text = ("## Sharded data parallelism under a TEE: DDP vs ZeRO-1 vs ZeRO-2 (emulated H100, virtual time)\n\n"
            "`--shard none|optimizer|gradients`, 25 MiB buckets, the ring; cc and fast on H100 CC hardware "
            f"(`--cc-hardware {CC_HARDWARE}`, {hardware_us:g} us per crossing, ISPASS 2025). \"over off\" is the "
            "step time over the same stage with TEE off; the messages are those rank 0's gradient collectives "
            "sealed per step (DDP: the all-reduce; ZeRO: the reduce-scatter, the gradient norm's parts and the "
            "parameter all-gather), the bytes all it sealed per step (the batches' ingress too).\n\n")
    text += ("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
             + "\n".join("| " + " | ".join(r) + " |" for r in body) + "\n\n")
    words = findings(res, models, ranks)
    if words:
        text += "**Findings**: " + "; ".join(words) + ".\n"
    return text
