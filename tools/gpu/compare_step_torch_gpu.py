#!/usr/bin/env python3
"""PyTorch eager GPT-2 training step on the GPU, the baseline for `teetrain bench step --device cuda`.

    python3 tools/gpu/compare_step_torch_gpu.py --batch 8 --seq 1024 [--tf32] [--json out.json]

The model is GPT-2 124M written with teetrain's math (GELU tanh, LayerNorm eps 1e-5, learned
positions, tied lm head, vocabulary padded to 50304 as llm.c does), FP32 by default, AdamW, random
tokens. Two attention variants are timed: "eager" (explicit softmax(QK^T)V, the same algorithm as
teetrain's CUDA backend) and "sdpa" (torch's fused scaled_dot_product_attention). Step time = median
of the timed steps, each ended by torch.cuda.synchronize().
"""
import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"compare_step_torch_gpu: cannot import torch ({e})")


class Block(nn.Module):
    def __init__(self, C, H, fused):
        super().__init__()
        self.H, self.fused = H, fused
        self.ln1, self.ln2 = nn.LayerNorm(C, eps=1e-5), nn.LayerNorm(C, eps=1e-5)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fc_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
            mask = torch.ones(T, T, device=x.device, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L=12, H=12, C=768, V=50257, Vp=50304, T=1024, fused=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(Vp, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H, fused) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self.V = V

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., : self.V].reshape(-1, self.V), targets.reshape(-1))


def time_steps(fused, args):
    torch.manual_seed(0)
    model = GPT(fused=fused).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    x = torch.randint(0, 50257, (args.batch, args.seq), device="cuda")
    y = torch.randint(0, 50257, (args.batch, args.seq), device="cuda")
    times = []
    for s in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if s >= args.warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), float(loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("compare_step_torch_gpu: no CUDA GPU visible to torch")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "batch": args.batch, "seq": args.seq,
           "precision": "tf32" if args.tf32 else "fp32"}
    for name, fused in (("eager", False), ("sdpa", True)):
        step, loss = time_steps(fused, args)
        res[f"{name}_step_s"] = step
        print(f"pytorch {torch.__version__} {name:5s} gpt2 B={args.batch} T={args.seq} {res['precision']}: "
              f"{step * 1e3:.1f} ms/step (loss {loss:.3f}) on {res['gpu']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
