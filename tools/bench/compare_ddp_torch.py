#!/usr/bin/python3
"""teetrain vs PyTorch DDP (gloo): step time of gpt2-mini data-parallel training on this machine.

    /usr/bin/python3 tools/bench/compare_ddp_torch.py                    # P=2, batch 4, seq 128, 1 thread/rank
    /usr/bin/python3 tools/bench/compare_ddp_torch.py --steps 30 --batch 8 --seq 128 --threads 1

Both sides train the same model for the same steps at the same per-rank batch, sequence length, ranks
and threads per rank, with AdamW and gradient averaging across ranks:

- PyTorch: GPT-2 written out below with teetrain's math (GELU tanh, LayerNorm eps 1e-5, learned
  positions, lm head tied to the token embedding), wrapped in DistributedDataParallel (gloo, default
  25 MB buckets), P processes from torch.multiprocessing on 127.0.0.1, random byte tokens, or the
  fortunes shard with --data (llm.c layout: 1024-byte header, then uint16 tokens).
- teetrain: `mpirun -np P build/teetrain train --model gpt2-mini ...` on data-cache/fortunes, reading
  the per-step times of --metrics (rank 0) and step_s_mean of --summary.

Step time = median over the timed steps (the first --warmup steps excluded) on rank 0; teetrain's
step_s_mean (all steps, warm-up included) is shown too. The machine is usually shared: the table
prints nproc, the CPU model and the load average before and after, which must be read with the numbers.
Use /usr/bin/python3 (Debian's python3-torch); any other interpreter without torch gets a clear error.
"""
import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:  # exit 2 = bad environment, as teetrain's bad-input code
    sys.exit(f"compare_ddp_torch: cannot import torch ({e}); run with /usr/bin/python3 after "
             f"`apt-get install python3-torch` (Debian 12 ships PyTorch 1.13)")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAPE = dict(n_layer=4, n_head=4, n_embd=256, vocab=256, context=256)  # teetrain's gpt2-mini preset


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.fc_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        # Explicit causal attention (no fused kernel in 1.13 CPU), the same arithmetic as ours.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab, context):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(context, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied lm head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_tokens(path):
    if not path:
        return None
    with open(path, "rb") as f:
        f.seek(1024)  # llm.c header: 256 int32
        data = f.read()
    return torch.frombuffer(bytearray(data), dtype=torch.int16).to(torch.int64) & 0xFFFF


def torch_worker(rank, args, port, out_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(1)  # DDP also broadcasts rank 0's parameters at construction
    model = DDP(GPT2(**SHAPE))
    # teetrain's defaults: lr 1e-3, betas (0.9, 0.95), weight decay 0.1 on matrices only.
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95))
    tokens = load_tokens(args.torch_data)
    g = torch.Generator().manual_seed(100 + rank)  # a disjoint stream per rank
    B, T = args.batch, args.seq
    times = []
    for _ in range(args.warmup + args.steps):
        if tokens is None:
            xy = torch.randint(0, SHAPE["vocab"], (B, T + 1), generator=g)
        else:
            starts = torch.randint(0, tokens.numel() - T - 1, (B,), generator=g)
            xy = torch.stack([tokens[s:s + T + 1] for s in starts.tolist()])
        dist.barrier()  # time each step from a common start, as the slowest rank sees it
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(xy[:, :-1].contiguous(), xy[:, 1:].contiguous())
        loss.backward()  # DDP all-reduces 25 MB buckets during backward
        opt.step()
        times.append(time.perf_counter() - t0)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"times": times, "loss": loss.item(), "params": sum(p.numel() for p in model.parameters())}, f)
    dist.destroy_process_group()


def run_torch(args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "torch.json")
        mp.spawn(torch_worker, args=(args, free_port(), out), nprocs=args.ranks, join=True)
        with open(out) as f:
            return json.load(f)


def run_teetrain(args, env):
    binary = os.path.join(REPO, args.teetrain)
    if not os.access(binary, os.X_OK):
        sys.exit(f"compare_ddp_torch: {binary} not found; build it (cmake --build build --target teetrain)")
    with tempfile.TemporaryDirectory() as d:
        summary, metrics = os.path.join(d, "s.json"), os.path.join(d, "m.jsonl")
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.ranks), binary, "train",
               "--model", "gpt2-mini", "--data", os.path.join(REPO, args.data), "--steps",
               str(args.warmup + args.steps), "--batch", str(args.batch), "--seq", str(args.seq), "--threads",
               str(args.threads), "--no-progress", "--summary", summary, "--metrics", metrics]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"compare_ddp_torch: teetrain failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
        with open(summary) as f:
            s = json.load(f)
        with open(metrics) as f:
            times = [json.loads(line)["step_s"] for line in f if line.strip()]
        return s, times, cmd


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return os.cpu_count(), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10, help="timed steps (after --warmup)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4, help="per-rank batch")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1, help="threads per rank (both sides)")
    ap.add_argument("--data", default="data-cache/fortunes", help="teetrain --data (relative to the repo)")
    ap.add_argument("--torch-data", default="", help="token shard for PyTorch (default: random bytes), "
                    "e.g. data-cache/fortunes_train.bin")
    ap.add_argument("--teetrain", default="build/teetrain", help="binary (relative to the repo)")
    ap.add_argument("--json", default="", help="write the result to FILE")
    args = ap.parse_args()
    if args.seq > SHAPE["context"]:
        sys.exit(f"compare_ddp_torch: --seq {args.seq} exceeds gpt2-mini's context {SHAPE['context']}")
    if args.torch_data:
        args.torch_data = os.path.join(REPO, args.torch_data)
    # Same threads per rank on both sides; passive OpenMP waits so idle ranks do not steal the cores,
    # after the short spin teetrain's workers make (tools/cli/main.cpp), on both sides alike.
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               OMP_WAIT_POLICY="passive", GOMP_SPINCOUNT=os.environ.get("GOMP_SPINCOUNT", "1000"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.update(
        {k: env[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")})

    load0 = os.getloadavg()
    t = run_torch(args)
    ours, ours_times, cmd = run_teetrain(args, env)
    load1 = os.getloadavg()

    torch_med = statistics.median(t["times"][args.warmup:])
    ours_med = statistics.median(ours_times[args.warmup:]) if len(ours_times) > args.warmup else ours["step_s_mean"]
    nproc, cpu = machine()
    tokens = args.batch * args.seq * args.ranks
    print(f"# gpt2-mini ({SHAPE}) data-parallel, P={args.ranks}, per-rank batch {args.batch}, seq {args.seq}, "
          f"{args.threads} thread(s)/rank, AdamW, {args.steps} timed steps after {args.warmup} warm-up")
    print(f"# machine: nproc {nproc}, {cpu}, load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} (start) "
          f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} (end)")
    print(f"# torch {torch.__version__} DDP gloo ({t['params']} params, random tokens"
          f"{'' if not args.torch_data else ' from ' + args.torch_data}); teetrain: {' '.join(cmd[5:])}")
    print(f"{'engine':<22} {'step_s(median)':>15} {'step_s(mean,all)':>17} {'tokens/s':>10} {'speedup':>8}")
    torch_mean = statistics.mean(t["times"])
    print(f"{'pytorch ddp (gloo)':<22} {torch_med:15.4f} {torch_mean:17.4f} {tokens / torch_med:10.0f} {1.0:8.2f}")
    print(f"{'teetrain (ring)':<22} {ours_med:15.4f} {ours['step_s_mean']:17.4f} {tokens / ours_med:10.0f} "
          f"{torch_med / ours_med:8.2f}")
    print(f"ratio pytorch/teetrain step time (median): {torch_med / ours_med:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": vars(args), "nproc": nproc, "cpu": cpu, "load_start": load0, "load_end": load1,
                       "torch_step_s_median": torch_med, "torch_step_s": t["times"],
                       "teetrain_step_s_median": ours_med, "teetrain_step_s_mean": ours["step_s_mean"],
                       "teetrain_step_s": ours_times, "ratio": torch_med / ours_med}, f, indent=2)


if __name__ == "__main__":
    main()
