#!/usr/bin/env python3
"""The topology study: a flat ring against the hierarchical all-reduce on nodes of G emulated GPUs
(`teetrain train --gpus-per-node G --allreduce-algo ring|hier`), TEE off, cc and fast, under each CC
platform of `--cc-hardware`, in virtual time (docs/design.md §11: the numbers of the modelled platform,
the same on any machine). Findings, dated, in docs/reproducing.md ("Topology").

Per P, TEE mode, platform and algorithm: the step time and its slowdown over TEE off with the same
algorithm, and the exposed communication (the summary's comm_exposed phase). One process hosts every
rank as threads (--ranks-per-process), whose virtual times equal P processes' bit for bit.

    /usr/bin/python3 tools/topology_study.py --bin build/teetrain --out runs/topology
"""
import argparse
import json
import os
import subprocess
import sys
import time

from reproduce import BASELINES  # the report's names of the TEE-off steps (Note [Fused attention baseline])

# (TEE mode, --cc-hardware): H100 CC as ISPASS 2025 measured it (pageable copies, the lead of
# tools/scenarios.py), Blackwell's encrypted NVLink for fast, the direct what-if for fast, and the
# multi-GPU platforms whose messages inside a node are not sealed: H100 PPCIe and the TEE-IO what-if.
PLATFORMS = (("cc", "h100-pageable"), ("fast", "h100-pageable"), ("cc", "blackwell"), ("fast", "blackwell"),
             ("fast", "direct-what-if"), ("cc", "h100-ppcie"), ("fast", "h100-ppcie"), ("cc", "tee-io-what-if"),
             ("fast", "tee-io-what-if"))
ALGOS = ("ring", "hier")


def run(args, P, algo, mode, hardware):
    name = f"topo-{args.model}-P{P}-G{args.gpus_per_node}-{mode}-{hardware or 'none'}-{algo}" + (
        "" if args.gpu_baseline == "teetrain" else f"-{args.gpu_baseline}")
    summary = os.path.join(args.out, "runs", name + ".json")
    if os.path.exists(summary):
        return json.load(open(summary))
    # One process per --ranks-per-process ranks: a process of 64 emulated GPUs under fast can exhaust
    # the host's memory maps (vm.max_map_count); the virtual times are the same either way.
    procs = max(1, P // args.ranks_per_process)
    launch = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(procs)] if procs > 1 else []
    cmd = launch + [args.bin, "train", "--ranks-per-process", str(P // procs), "--model", args.model, "--data", args.data,
           "--batch", str(args.batch), "--seq", str(args.seq), "--steps", str(args.steps + 1), "--timing-warmup", "1",
           "--bucket-mb", "25", "--val-batches", "0", "--no-progress", "-q", "--compute", "emulate", "--gpu", "h100",
           "--gpus-per-node", str(args.gpus_per_node), "--inter-node-link", args.inter, "--allreduce-algo", algo,
           "--tee", mode, "--summary", summary]
    if args.gpu_baseline != "teetrain":  # Note [Fused attention baseline]: reproduce.py's BASELINES
        cmd += ["--gpu-baseline", args.gpu_baseline]
    if mode != "off":
        vendor = os.path.join(args.out, "vendor")
        cmd += ["--cc-hardware", hardware, "--allow-plain-data", "--trust-root", os.path.join(vendor, "vendor_root.crt"),
                "--device-identity", os.path.join(vendor, "device_{rank}.pem")]
    t0 = time.time()
    with open(os.path.join(args.out, "logs", name + ".log"), "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"topology_study: {name} exited {rc}; see {args.out}/logs/{name}.log")
    print(f"topology_study: {name} {time.time() - t0:.1f} s", flush=True)
    return json.load(open(summary))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/teetrain")
    ap.add_argument("--out", default="runs/topology")
    ap.add_argument("--data", default="data-cache/fortunes", help="token shards (`teetrain prepare-text`)")
    ap.add_argument("--model", default="gpt2-xl")
    ap.add_argument("--ranks", default="16,64", help="comma-separated P")
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--inter", default="ib", help="--inter-node-link")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=1, help="timed steps (virtual time: one says it all)")
    ap.add_argument("--ranks-per-process", type=int, default=32, help="ranks one process hosts as threads")
    ap.add_argument("--platforms", default="", help="comma-separated --cc-hardware rows to run (default: all)")
    ap.add_argument("--gpu-baseline", choices=list(BASELINES), default="teetrain",
                    help="the TEE-off step modelled (train --gpu-baseline); the report names it")
    args = ap.parse_args()
    chosen = [hw for hw in args.platforms.split(",") if hw]
    unknown = sorted(set(chosen) - {hw for _, hw in PLATFORMS})
    if unknown:
        sys.exit(f"topology_study: unknown --platforms {','.join(unknown)}; choose from "
                 f"{','.join(sorted({hw for _, hw in PLATFORMS}))}")
    ranks = [int(p) for p in args.ranks.split(",")]
    for d in ("runs", "logs"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    if not any(os.path.exists(p) for p in (args.data, args.data + "_train.bin")):
        subprocess.check_call([args.bin, "prepare-text", "--out", os.path.dirname(args.data) or ".",
                               "--name", os.path.basename(args.data)])
    subprocess.check_call([args.bin, "provision", "--out", os.path.join(args.out, "vendor"), "--devices",
                           str(max(ranks))], stdout=subprocess.DEVNULL)
    rows = []
    for P in ranks:
        off = {a: run(args, P, a, "off", None) for a in ALGOS}
        for a in ALGOS:
            rows.append(dict(P=P, mode="off", platform="-", algo=a, step=off[a]["step_s_mean"], x=1.0,
                             exposed=off[a]["phases"]["comm_exposed"]["mean"]))
        for mode, hw in PLATFORMS:
            if chosen and hw not in chosen:
                continue
            for a in ALGOS:
                s = run(args, P, a, mode, hw)
                rows.append(dict(P=P, mode=mode, platform=hw, algo=a, step=s["step_s_mean"],
                                 x=s["step_s_mean"] / off[a]["step_s_mean"],
                                 exposed=s["phases"]["comm_exposed"]["mean"]))
    topo = run(args, ranks[0], "hier", "off", None)["topology"]
    lines = [f"{args.model}, batch {args.batch} x {args.seq}, 25 MiB buckets, nodes of {args.gpus_per_node} GPUs, "
             f"{topo.split(', ', 1)[1]}; TEE-off step: {BASELINES[args.gpu_baseline][0]}",
             "", "| P | mode | platform | algorithm | step (s) | x off | exposed comm (s) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['P']} | {r['mode']} | {r['platform']} | {r['algo']} | {r['step']:.3f} | {r['x']:.2f}x | "
              f"{r['exposed']:.3f} |" for r in rows]
    report = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "topology.md"), "w").write(report)
    json.dump(rows, open(os.path.join(args.out, "topology.json"), "w"), indent=1)
    print(report, end="")


if __name__ == "__main__":
    main()
