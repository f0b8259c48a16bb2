#!/usr/bin/python3
"""Platform presets for tools/predict_paper.py --platform: what one DDP step of the same run costs under
each GPU confidential-computing design, from the sourced figures in tools/calibration/platforms.json.

    h100-cc       the paper's emulated multi-GPU CC: every ring hop through CPU-sealed bounce buffers
                  (predict_paper.py's model; its lead row, passed in, not recomputed here)
    h100-ppcie    Hopper's shipped multi-GPU mode, Protected PCIe: NVLink inside the trust boundary, the
                  ring in plaintext; only the batch's host->device copies pay CC's bounce buffers
    blackwell-cc  HGX B200/B300 with NVLink encryption: the ring stays encrypted, on the GPUs' copy engines

Each preset prints its slowdown (step time / the TEE-off step) with 25 MiB buckets and with one
whole-model bucket, beside the published figures; an error only where the published set-up is ours.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PLATFORMS = os.path.join(HERE, "calibration", "platforms.json")


def load_platforms():
    with open(PLATFORMS) as f:
        return json.load(f)


def names(plat):
    return list(plat["platforms"])


def figure(entry, src):
    """A figure's value; {"ref": "h100_cc_sources.json#KEY"} reads KEY from that file (already loaded as
    src), so one measured number is stored once."""
    if "ref" in entry:
        return src[entry["ref"].split("#", 1)[1]]
    return entry["value"]


def workload(run, plat):
    """Launches and host->device batch copies per step. Launches need the layer count (GPT-2 family); a run
    without it gets None, and the launch term is left out rather than guessed."""
    w = plat["workload"]
    n_layer = run.get("n_layer")
    launches = None if n_layer is None else (w["launches_per_layer"]["value"] * n_layer
                                             + w["launches_per_step"]["value"])
    tokens = run.get("batch", 0) * run.get("seq", 0)
    return launches, w["batch_crossings"]["value"], 4 * tokens  # int32 tokens, targets


def host_side_s(launches, crossings, bytes_each, fixed_us, us_per_byte, launch_us):
    """What CC adds on the host side of one step, added serially (an upper bound: launches queue
    asynchronously and usually hide under GPU time): the batch's copies and the slower launches."""
    ingress = crossings * (fixed_us + bytes_each * us_per_byte) * 1e-6
    return ingress, (launches or 0) * launch_us * 1e-6


def slowdowns(run, kernel_ratio, comm_25, comm_1, host_s):
    """Step / T_off with 25 MiB buckets (communication overlaps backward) and one whole-model bucket (it
    does not), the step's kernels scaled by CC's kernel-time ratio: the one step rule, which
    predict_paper.predict uses too."""
    t_off, t_bwd = run["t_off"] * kernel_ratio, run["t_backward"] * kernel_ratio
    step_25 = t_off - t_bwd + max(t_bwd, comm_25) + host_s
    return step_25 / run["t_off"], (t_off + comm_1 + host_s) / run["t_off"]


def ppcie(run, plat, src, costs):
    """Protected PCIe: NCCL's ring is the same plaintext NVLink traffic as with TEE off, so it adds nothing;
    the batch crosses H2D through CC's bounce buffer (synchronous copy, CC minus off)."""
    p = plat["platforms"]["h100-ppcie"]["figures"]
    launch = figure(p["kernel_launch_us"], src)
    ratio = figure(p["kernel_time_ratio_cc"], src)["value"]
    h2d = costs["page_h2d"]
    launches, crossings, bytes_each = workload(run, plat)
    ingress, launch_s = host_side_s(launches, crossings, bytes_each, h2d["added_fixed_us"],
                                    h2d["added_us_per_byte"], launch["cc"] - launch["off"])
    s25, s1 = slowdowns(run, ratio, 0.0, 0.0, ingress + launch_s)
    return {"slowdown_25mib": s25, "slowdown_whole": s1,
            "parts": {"ring_s": 0.0, "ingress_s": ingress, "launch_s": launch_s, "kernel_ratio": ratio,
                      "launches": launches, "batch_crossings": crossings, "batch_bytes_each": bytes_each}}


def blackwell_hop_us(costs):
    """The lead assumption for the unpublished set-up of one encrypted NVLink transfer: what H100 CC adds
    to one queued copy at each end (both are copy-engine bounce-buffer copies)."""
    return costs["pin_d2h"]["added_fixed_us"] + costs["pin_h2d"]["added_fixed_us"]


def blackwell(run, plat, src, costs, P, hop_us=None):
    """Blackwell CC: 2(P-1) encrypted NVLink hops per bucket at the published in-CVM P2P rate plus a set-up
    each (hop_us; None = the lead assumption), and the batch through the host bridge's fixed toll."""
    f = plat["platforms"]["blackwell-cc"]["figures"]
    hop_us = blackwell_hop_us(costs) if hop_us is None else hop_us
    wire_s = 2 * (P - 1) / P * run["grad_bytes"] / (f["nvlink_p2p_gbps"]["value"] * 1e9)
    comm = lambda buckets: 2 * (P - 1) * buckets * hop_us * 1e-6 + wire_s
    # B300's CC-off H2D rate is not published: H100 NVL's CC-off pinned fit (PCIe Gen5) stands in.
    h2d_gbps = costs["pin_h2d"]["off"][1] * f["bridge_h2d_ratio"]["value"]
    launch = figure(plat["platforms"]["h100-ppcie"]["figures"]["kernel_launch_us"], src)  # assumption
    launches, crossings, bytes_each = workload(run, plat)
    ingress, launch_s = host_side_s(launches, crossings, bytes_each, f["bridge_fixed_us"]["value"],
                                    1e-3 / h2d_gbps, launch["cc"] - launch["off"])
    ratio = 1 / f["matmul_ratio_cc"]["value"]
    s25, s1 = slowdowns(run, ratio, comm(run["buckets"]), comm(1), ingress + launch_s)
    return {"slowdown_25mib": s25, "slowdown_whole": s1,
            "parts": {"ring_25mib_s": comm(run["buckets"]), "ring_whole_s": comm(1), "wire_s": wire_s,
                      "nvlink_gbps": f["nvlink_p2p_gbps"]["value"],
                      "hop_us": hop_us, "ingress_s": ingress, "launch_s": launch_s, "kernel_ratio": ratio,
                      "launches": launches, "batch_crossings": crossings, "batch_bytes_each": bytes_each}}


def blackwell_bounds(run, plat, src, costs, P):
    """The Blackwell prediction at the two ends of the unpublished per-transfer set-up, and the lead."""
    toll = plat["platforms"]["blackwell-cc"]["figures"]["bridge_fixed_us"]["value"]
    rows = []
    for name, hop in (("0 (link rate only)", 0.0), ("lead: H100 queued copy, each end", None),
                      ("2 x Blackwell bridge toll", 2 * toll)):
        r = blackwell(run, plat, src, costs, P, hop)
        rows.append({"hop_setup": name, "hop_us": r["parts"]["hop_us"],
                     "slowdown_25mib": r["slowdown_25mib"], "slowdown_whole": r["slowdown_whole"]})
    return rows


def platform_rows(run, selected, h100_lead, plat, src, costs, P):
    """One row per selected preset for one run; h100-cc is predict_paper.py's lead (passed in)."""
    rows = []
    for name in selected:
        if name == "h100-cc":
            r = {"slowdown_25mib": h100_lead["slowdown_25mib"], "slowdown_whole": h100_lead["slowdown_whole"],
                 "parts": {"scenario": {k: h100_lead[k] for k in ("copies", "bytes", "batch_scale", "crypto_threads")}}}
        elif name == "h100-ppcie":
            r = ppcie(run, plat, src, costs)
        else:
            r = blackwell(run, plat, src, costs, P)
        rows.append({"platform": name, "model": run.get("model", "?"), "batch": run.get("batch"),
                     "seq": run.get("seq"), **r})
    return rows


def fmt(x):
    return f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


def ref_text(ref):
    """A published figure in a few characters, or None where it was not found."""
    if "slowdown" in ref:
        s = ref["slowdown"]
        return f"{s[0]:.2f}-{s[1]:.2f}x" if isinstance(s, list) else f"{s:g}x"
    if "slowdown_max" in ref:
        return f"<= {ref['slowdown_max']:.2f}x"
    if ref.get("performance_of_cc_off") is not None:
        return f"{ref['performance_of_cc_off']:.0%} of CC off"
    return None


def published_cell(plat, row):
    """The platform's training figures beside its prediction; an error only for the same set-up (the
    paper's GPT-2-XL: Lee et al. for h100-cc). Returns (published text, error text)."""
    refs = [r for r in plat["platforms"][row["platform"]]["reference"]
            if r["bucket"] != "inference" and ref_text(r)]
    if not refs:
        return "none found", ""
    same = [r for r in refs if r["same_setup"]]
    if not same:
        return "; ".join(f"{ref_text(r)} ({r['name'].split(',')[0]}, other set-up)" for r in refs), "n/a"
    by = {r["bucket"]: r["slowdown"] for r in same}
    text = f"{by['25mib']}x / {by['whole']}x (Lee et al., same set-up)"
    if row["model"] != "gpt2-xl":
        return text, "n/a (other model)"
    err = lambda pred, pub: f"{100.0 * (pred - pub) / pub:+.0f}%"
    return text, f"{err(row['slowdown_25mib'], by['25mib'])} / {err(row['slowdown_whole'], by['whole'])}"


def table_lines(rows, plat, P):
    lines = [f"Platforms after H100 ({P} GPUs; slowdown = step time / the TEE-off step; "
             "published figures are compared with, never used as inputs):",
             "| platform | run | 25 MiB buckets | whole-model bucket | published (25 MiB / whole) | error |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        pub, err = published_cell(plat, r)
        shape = f"b{r['batch']}x{r['seq']}" if r.get("seq") else f"b{r['batch']}"  # image models have no seq
        lines.append(f"| {r['platform']} | {r['model']} {shape} | {fmt(r['slowdown_25mib'])} | "
                     f"{fmt(r['slowdown_whole'])} | {pub} | {err} |")
    return lines


def why_text(run, rows, src, costs, P):
    """Why ppcie is small and cc large, with this run's numbers."""
    by = {r["platform"]: r["parts"] for r in rows}
    hops = 2 * (P - 1) * run["buckets"]
    hop_us = costs["page_d2h"]["added_fixed_us"] + costs["page_h2d"]["added_fixed_us"]
    sent = 2 * (P - 1) / P * run["grad_bytes"]
    aes = src["cpu_aes256gcm_gbps"]["value"]
    pp = by.get("h100-ppcie") or {}
    host = (f" ({pp['batch_crossings']} H2D copies of {pp['batch_bytes_each'] / 1024:.0f} KiB: "
            f"{pp['ingress_s'] * 1e6:.0f} us; {pp['launches']} launches x {pp['launch_s'] / pp['launches'] * 1e6:.2f} us "
            f"= {pp['launch_s'] * 1e3:.1f} ms, "
            f"added serially as an upper bound; kernels x {pp['kernel_ratio']:.3f})") if pp and pp["launches"] else ""
    text = (f"Why h100-cc is large and h100-ppcie small: under the paper's emulated CC every gradient byte leaves "
            f"the GPU package. Each of the {run['buckets']} buckets takes 2(P-1) = {2 * (P - 1)} ring hops, "
            f"{hops} a step, and every hop is a device->host copy through a CC bounce buffer, a seal and an open "
            f"by one CPU core, and a host->device copy: {hops * hop_us / 1e3:.0f} ms of per-crossing set-up "
            f"({hop_us:.1f} us a hop) plus {sent / 1e9:.2f} GB sent and received per rank through AES-GCM at "
            f"{aes:.2f} GB/s ({2 * sent / (aes * 1e9):.1f} s), against a {run['t_off']:.3f} s step. Under "
            f"Protected PCIe the GPUs and NVLink are inside the trust boundary: NCCL's all-reduce runs in "
            f"plaintext over NVLink exactly as with TEE off, so the ring adds nothing; only the batch crosses "
            f"the CPU-GPU boundary through CC's bounce buffer{host}.")
    bw = by.get("blackwell-cc")
    if bw:
        text += (f" Blackwell keeps the ring encrypted, but on the GPUs' copy engines over NVLink "
                 f"({bw['nvlink_gbps']:g} GB/s inside a CVM) instead of one CPU core: the same bytes take {bw['wire_s'] * 1e3:.0f} ms, hidden "
                 f"under backward with 25 MiB buckets; what is not published is the set-up of one encrypted "
                 f"transfer, which decides whether bucket size matters again (bounds below).")
    return text


def reference_lines(plat, selected):
    lines = ["Published figures (compare only; every source and condition is in tools/calibration/platforms.json):"]
    for name in selected:
        for r in plat["platforms"][name]["reference"]:
            what = ref_text(r)
            lines.append(f"  {name}: {r['name']}: " + (f"{what}. {r['source']}" if what else r["note"]))
    return lines


def bounds_lines(bounds):
    lines = ["blackwell-cc, set-up per encrypted NVLink transfer (not published; the lead is the middle row):",
             "| set-up per hop | us | 25 MiB buckets | whole-model bucket |", "|---|---|---|---|"]
    for b in bounds:
        lines.append(f"| {b['hop_setup']} | {b['hop_us']:.1f} | {fmt(b['slowdown_25mib'])} | {fmt(b['slowdown_whole'])} |")
    return lines


def report_lines(runs_rows, lead_run, selected, plat, src, costs, P):
    """The platform section: the table over every run, why, the Blackwell bounds, the published figures."""
    rows = [r for rr in runs_rows for r in rr]
    lines = table_lines(rows, plat, P) + [""]
    lead_rows = runs_rows[0]
    lines.append(why_text(lead_run, lead_rows, src, costs, P))
    if "blackwell-cc" in selected:
        lines += [""] + bounds_lines(blackwell_bounds(lead_run, plat, src, costs, P))
    return lines + [""] + reference_lines(plat, selected)
