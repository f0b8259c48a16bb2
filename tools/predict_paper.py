#!/usr/bin/python3
"""Predicts Lee et al.'s GPT-2-XL slowdowns on 4 H100s from independent figures, then compares.

    /usr/bin/python3 tools/predict_paper.py --summary runs/repro-quick/runs/calibration-gpt2-xl-P1-off.json
    /usr/bin/python3 tools/predict_paper.py --summary S.json --json prediction.json
    /usr/bin/python3 tools/predict_paper.py --summary S.json --platform h100-ppcie

Inputs, none derived from the paper's results (tools/calibration/h100_cc_sources.json names each source):
- H100 CC copy costs: the ISPASS 2025 artifact's bandwidthTest sweeps with CC on and off
  (tools/calibration/h100_cc_bandwidth_ispass25.csv), fitted per path as t(B) = fixed + B / bandwidth;
- one CPU core's AES-256-GCM rate on the same machine (the artifact's openssl speed);
- the TEE-off step of GPT-2-XL on one emulated H100 (a `teetrain train --compute emulate --gpu h100
  --summary` of gpt2-xl, TEE off, one rank: tools/reproduce.py's calibration run), whose op costs are fitted
  to real GPU steps (tests/fixtures/step_h100, step_h200), and its gradient bytes and 25 MiB buckets.

The model, per rank and step (P ranks in a ring, one CPU thread sealing for each GPU as in the paper's
CPU-side encryption): each bucket of S bytes takes 2(P-1) hops of S/P bytes; in every hop a rank
seals what it sends and opens what it receives (2 AES-GCM passes over S/P at the CPU rate), and under
H100 CC the chunk also crosses device -> host before the seal and host -> device after the open
(a fixed cost each, plus, in the "bounce bytes" variant, the copy's own per-byte cost: CC's bounce
buffers are encrypted by a CPU core too). Communication overlaps backward with DDP's buckets, and not
with one whole-model bucket:
    step(25 MiB) = T_off - T_backward + max(T_backward, T_comm)      step(whole) = T_off + T_comm
The paper's batch, sequence length and precision are not known: T_off scales with the tokens of a
step, so the sensitivity table shows the prediction at other batches.

--platform (tools/predict_platforms.py, figures in tools/calibration/platforms.json) also predicts the run on
the platforms after this emulation: H100 Protected PCIe and Blackwell's multi-GPU CC. --summary may be given
more than once (e.g. the gpt2 sizes): the H100 CC analysis is printed for the first, the platform table for all.
"""
import argparse
import csv
import json
import os
import sys

import predict_platforms

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "calibration", "h100_cc_sources.json")
# The paper's GPT-2-XL pair, for the derived paper-fit scenario only (never an input of a prediction).
PAPER_PAIR = {"gpt2_xl_4gpu": 41.6, "gpt2_xl_tuned": 3.03}


def load_sweep(path):
    """{column: [(bytes, GB/s)]} from the transcribed bandwidthTest sweep (comment lines start with #)."""
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    cols = [c for c in rows[0] if c != "bytes"]
    return {c: [(int(r["bytes"]), float(r[c])) for r in rows] for c in cols}


def fit_copy(points, max_bytes=64 << 20):
    """t(B) = fixed_us + B / gbps, least squares on relative error over 64 B .. max_bytes (CC's plateau
    falls beyond 64 MiB). Returns (fixed_us, gbps)."""
    xs, ts = [], []
    for b, gbps in points:
        if b <= max_bytes:
            xs.append(b)
            ts.append(b / (gbps * 1e3))  # us
    w = [1 / t ** 2 for t in ts]
    sw, sx, sy = sum(w), sum(a * x for a, x in zip(w, xs)), sum(a * t for a, t in zip(w, ts))
    sxx, sxy = sum(a * x * x for a, x in zip(w, xs)), sum(a * x * t for a, x, t in zip(w, xs, ts))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return (sy - slope * sx) / sw, 1 / slope / 1e3


def copy_costs(sweep):
    """CC's added cost per crossing, per direction and memory kind: (fixed_us, us per byte)."""
    out = {}
    for kind in ("pin", "page"):
        for d in ("h2d", "d2h"):
            f_off, bw_off = fit_copy(sweep[f"{kind}_{d}_off"])
            f_cc, bw_cc = fit_copy(sweep[f"{kind}_{d}_cc"])
            out[f"{kind}_{d}"] = {"off": [f_off, bw_off], "cc": [f_cc, bw_cc],
                                  "added_fixed_us": f_cc - f_off, "added_us_per_byte": 1e-3 / bw_cc - 1e-3 / bw_off}
    return out


def load_sources():
    """The sourced figures (h100_cc_sources.json) and the copy costs fitted to the sweep beside them."""
    with open(SOURCES) as f:
        src = json.load(f)
    return src, copy_costs(load_sweep(os.path.join(HERE, "calibration", src["bandwidth_sweep"]["file"])))


def independent_crossing_us():
    """What H100 CC adds to one synchronous host<->device copy's fixed cost, mean of the two directions:
    the per-crossing toll tools/reproduce.py --cc-transfer-us ispass charges (the per-byte part is the
    CPU sealing cc already does for real)."""
    _, costs = load_sources()
    return (costs["page_h2d"]["added_fixed_us"] + costs["page_d2h"]["added_fixed_us"]) / 2


def comm_seconds(grad_bytes, buckets, P, aes_gbps, crossing, bounce_bytes, crypto_threads=1, copies=False):
    """Per-rank CPU time of one step's sealed ring: sealing and crossings, one hop after another. copies:
    the crossings' bytes at the CC copy plateaus (`--cc-hardware`), which include one AES-GCM pass each."""
    hops = 2 * (P - 1) * buckets
    chunk_bytes_total = 2 * (P - 1) / P * grad_bytes  # what a rank sends (and receives) per step
    fixed = hops * (crossing["d2h"]["added_fixed_us"] + crossing["h2d"]["added_fixed_us"]) * 1e-6
    per_byte = 2 / (aes_gbps * 1e9)  # seal what is sent, open what is received
    copy_extra = 0.0  # per byte, beyond the host's AES-GCM pass: one crossing at a time, not threaded
    if copies:  # as the emulator's crossings (platform/emulated/emulated_platform.cpp, crossing_bytes)
        copy_extra = sum(max(0.0, 1 / (crossing[d]["cc"][1] * 1e9) - 1 / (aes_gbps * 1e9)) for d in ("d2h", "h2d"))
        if bounce_bytes:
            per_byte *= 2  # --bounce-reencrypt: the host's cipher passes over every byte twice
    elif bounce_bytes:
        per_byte += (crossing["d2h"]["added_us_per_byte"] + crossing["h2d"]["added_us_per_byte"]) * 1e-6
    return fixed + chunk_bytes_total * (per_byte / crypto_threads + copy_extra)


def predict(t_off, t_bwd, grad_bytes, buckets, P, aes_gbps, crossing, bounce_bytes, crypto_threads=1,
            copies=False):
    """(slowdown with `buckets` buckets, with one whole-model bucket): the step rule every platform shares
    (predict_platforms.slowdowns), with the sealed ring's CPU time as the communication."""
    comm_25 = comm_seconds(grad_bytes, buckets, P, aes_gbps, crossing, bounce_bytes, crypto_threads, copies)
    comm_1 = comm_seconds(grad_bytes, 1, P, aes_gbps, crossing, bounce_bytes, crypto_threads, copies)
    return predict_platforms.slowdowns({"t_off": t_off, "t_backward": t_bwd}, 1.0, comm_25, comm_1, 0.0)


def scenarios(run, src, costs):
    """The prediction under each assumption the paper leaves open, first row the lead."""
    aes = src["cpu_aes256gcm_gbps"]["value"]
    P = src["paper_setup"]["gpus"]
    rows = []
    for kind, kind_name in (("page", "synchronous copies"), ("pin", "queued copies")):
        crossing = {"d2h": costs[f"{kind}_d2h"], "h2d": costs[f"{kind}_h2d"]}
        for bounce, bounce_name in ((False, "link seal only"), (True, "+ bounce bytes")):
            for scale in (1, 0.25, 8):
                for threads in (1, 8):
                    if kind == "pin" and (scale != 1 or threads != 1):
                        continue  # the copy kind barely matters: one row shows it
                    s25, s1 = predict(run["t_off"] * scale, run["t_backward"] * scale, run["grad_bytes"],
                                      run["buckets"], P, aes, crossing, bounce, threads)
                    rows.append({"copies": kind_name, "bytes": bounce_name, "batch_scale": scale,
                                 "crypto_threads": threads, "slowdown_25mib": s25, "slowdown_whole": s1})
    return rows


def named_scenarios(run):
    """The named scenarios of tools/scenarios.py (which tools/reproduce.py also runs on the emulator),
    computed here in closed form from this run's figures."""
    import scenarios  # here, not at the top: scenarios imports this module
    lines = ["Named scenarios (tools/scenarios.py; tools/reproduce.py runs the same ones on the emulator):",
             "| scenario | 25 MiB buckets | whole model |", "|---|---|---|"]
    for name, _, derived, every, *_ in scenarios.SCENARIOS:
        if every:
            lines.append(f"| {name} | needs its own TEE-off run ({' '.join(every)}; reproduce.py makes it) | |")
            continue
        toll = scenarios.paper_toll_us({"step_s_mean": run["t_off"], "buckets": run["buckets"]},
                                       PAPER_PAIR) if derived else None
        if derived and toll is None:
            continue
        s25, s1 = scenarios.closed_form(name, run, toll)
        lines.append(f"| {name}{' (derived from the paper)' if derived else ''} | {s25:.1f}x | {s1:.1f}x |")
    return "\n".join(lines)


def run_from_summary(path, ranks_ok=False):
    """The step figures of a `teetrain train --summary`; ValueError unless it is a TEE-off, emulated run
    of one rank (ranks_ok: of any number; its step then includes the plaintext ring, which emulated
    NVLink hides under backward, and this host's core sharing)."""
    with open(path) as f:
        s = json.load(f)
    one = s.get("world_size", 1) == 1 or ranks_ok
    if not one or s.get("tee", {}).get("mode") != "off" or s.get("compute") != "emulate":
        raise ValueError(f"{path} is not a one-rank, TEE-off, emulated run (tools/reproduce.py's calibration run is)")
    return figures_of(s)


def figures_of(s):
    """The step figures the closed form needs, from a TEE-off run's summary."""
    return {"t_off": s["step_s_mean"], "t_backward": s["phases"]["backward"]["mean"],
            "grad_bytes": 4 * s["num_params"], "buckets": s["buckets"], "model": s["config"]["model"]["name"],
            "batch": s["config"]["batch"], "seq": s["config"]["seq"], "gpu": s.get("gpu"),
            "n_layer": s["config"]["model"].get("n_layer")}


def run_figures(args):
    """The runs to predict, one per --summary; the overrides need at most one (which run would they change?)."""
    paths = args.summary or [None]
    if len(paths) > 1 and any(getattr(args, k) is not None for k in ("t_off", "t_backward", "buckets", "params")):
        sys.exit("predict_paper: --t-off, --t-backward, --params and --buckets take at most one --summary")
    return [one_run(args, p) for p in paths]


def one_run(args, path):
    run = {}
    if path:
        try:
            run = run_from_summary(path)
        except ValueError as e:
            sys.exit(f"predict_paper: {e}")
    for k in ("t_off", "t_backward", "buckets"):
        if getattr(args, k) is not None:
            run[k] = getattr(args, k)
    if args.params is not None:
        run["grad_bytes"] = 4 * args.params
    missing = [k for k in ("t_off", "t_backward", "grad_bytes", "buckets") if k not in run]
    if missing:
        sys.exit("predict_paper: give --summary (a gpt2-xl TEE-off emulated run) or " +
                 ", ".join("--" + m.replace("_", "-") for m in missing))
    if not (run["t_off"] > 0 and 0 <= run["t_backward"] <= run["t_off"] and run["buckets"] >= 1):
        sys.exit("predict_paper: need t_off > 0, 0 <= t_backward <= t_off and buckets >= 1")
    return run


def report(run, src, costs, rows):
    paper = src["paper_setup"]
    lead = rows[0]
    err = lambda pred, pub: 100.0 * (pred - pub) / pub
    lines = [
        f"H100 CC per crossing (ISPASS 2025 artifact, fitted t = fixed + bytes/bandwidth over 64 B..64 MiB; CC minus off):",
    ]
    for path, c in costs.items():
        lines.append(f"  {path:9s} off {c['off'][0]:6.2f} us + B/{c['off'][1]:6.2f} GB/s   cc {c['cc'][0]:6.2f} us + "
                     f"B/{c['cc'][1]:5.3f} GB/s   added {c['added_fixed_us']:5.1f} us + {c['added_us_per_byte'] * 1e3:.3f} ns/B")
    lines.append(f"CPU AES-256-GCM, one core: {src['cpu_aes256gcm_gbps']['value']:.2f} GB/s (artifact fig4/crypto-dvfs.csv)")
    lines.append(f"TEE-off step, {run.get('model', 'gpt2-xl')} on one emulated {run.get('gpu') or 'GPU'}"
                 f" (batch {run.get('batch', '?')}, seq {run.get('seq', '?')}): {run['t_off']:.3f} s, backward "
                 f"{run['t_backward']:.3f} s; {run['grad_bytes'] / 1e9:.2f} GB of gradients in {run['buckets']} buckets")
    lines.append("")
    lines.append(f"| | published (Lee et al.) | predicted (lead) | error |")
    lines.append(f"|---|---|---|---|")
    lines.append(f"| GPT-2-XL, 4 GPUs, 25 MB buckets | {paper['published_slowdown_25mb']}x | "
                 f"{lead['slowdown_25mib']:.1f}x | {err(lead['slowdown_25mib'], paper['published_slowdown_25mb']):+.0f}% |")
    lines.append(f"| same, larger buckets (one bucket) | {paper['published_slowdown_tuned']}x | "
                 f"{lead['slowdown_whole']:.1f}x | {err(lead['slowdown_whole'], paper['published_slowdown_tuned']):+.0f}% |")
    lines.append(f"| ratio 25 MB / larger buckets | {paper['published_slowdown_25mb'] / paper['published_slowdown_tuned']:.1f} | "
                 f"{lead['slowdown_25mib'] / lead['slowdown_whole']:.2f} | |")
    lines.append("")
    lines.append("Sensitivity (the lead is the first row):")
    lines.append("| copies | crossing bytes | batch x | crypto threads | 25 MiB | whole model |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        lines.append(f"| {r['copies']} | {r['bytes']} | {r['batch_scale']:g} | {r['crypto_threads']} | "
                     f"{r['slowdown_25mib']:.1f}x | {r['slowdown_whole']:.1f}x |")
    return "\n".join(lines)


def prediction(run, selected=None):
    """The report text and its JSON record for one run's figures (tools/reproduce.py's prediction_section)."""
    return predictions([run], selected)


def predictions(runs, selected=None):
    """The H100 CC analysis of the first run (when h100-cc is selected), then the platform table for every
    run. The JSON record keeps the first run's keys as before and adds every run's platform rows."""
    src, costs = load_sources()
    plat = predict_platforms.load_platforms()
    selected = selected or predict_platforms.names(plat)
    P = src["paper_setup"]["gpus"]
    rows = [scenarios(r, src, costs) for r in runs]
    runs_rows = [predict_platforms.platform_rows(r, selected, rs[0], plat, src, costs, P) for r, rs in zip(runs, rows)]
    text = report(runs[0], src, costs, rows[0]) + "\n\n" + named_scenarios(runs[0]) + "\n\n" \
        if "h100-cc" in selected else ""
    text += "\n".join(predict_platforms.report_lines(runs_rows, runs[0], selected, plat, src, costs, P))
    platforms = {"selected": selected, "gpus": P, "runs": [{"run": r, "rows": rr} for r, rr in zip(runs, runs_rows)],
                 "figures": plat}
    if "blackwell-cc" in selected:
        platforms["blackwell_bounds"] = predict_platforms.blackwell_bounds(runs[0], plat, src, costs, P)
    record = {"run": runs[0], "copy_costs": costs, "scenarios": rows[0], "platforms": platforms,
              "published": {k: v for k, v in src["paper_setup"].items() if k.startswith("published")}}
    return text, record


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--summary", action="append",
                    help="teetrain --summary of gpt2-xl, TEE off, one rank, --compute emulate (repeatable)")
    ap.add_argument("--t-off", type=float, help="TEE-off step seconds (overrides the summary)")
    ap.add_argument("--t-backward", type=float, help="backward seconds of that step")
    ap.add_argument("--params", type=int, help="parameters (FP32 gradients: 4 bytes each)")
    ap.add_argument("--buckets", type=int, help="DDP buckets at 25 MiB")
    ap.add_argument("--json", help="also write the prediction as JSON")
    ap.add_argument("--platform", default="all", help="all (default) or one of tools/calibration/platforms.json's "
                    "presets: h100-cc (the paper's emulated CC), h100-ppcie, blackwell-cc")
    args = ap.parse_args()
    valid = predict_platforms.names(predict_platforms.load_platforms())
    if args.platform != "all" and args.platform not in valid:
        print(f"predict_paper: unknown --platform {args.platform}; valid: all, {', '.join(valid)}", file=sys.stderr)
        sys.exit(2)
    text, record = predictions(run_figures(args), None if args.platform == "all" else [args.platform])
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
