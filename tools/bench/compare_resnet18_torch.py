#!/usr/bin/python3
"""PyTorch 1.13 CPU training throughput at the shapes of tests/bench/bench_resnet.cpp and `teetrain bench step`.

    /usr/bin/python3 tools/bench/compare_resnet18_torch.py                  # resnet18, 32x32, batch 32, 2 threads
    /usr/bin/python3 tools/bench/compare_resnet18_torch.py --stem cifar --steps 10
    /usr/bin/python3 tools/bench/compare_resnet18_torch.py --model resnet-small --batch 128
    /usr/bin/python3 tools/bench/compare_resnet18_torch.py --json out.json  # one record per line

One step = zero_grad + forward + cross-entropy + backward + SGD(momentum 0.9) on one batch, as in
bench_resnet and `teetrain bench step`. resnet18 is torchvision's `torchvision.models.resnet18` when
python3-torchvision is installed (--stem cifar swaps in the 3x3/1 conv1 and drops the max-pool, which is
what teetrain's ResnetStem::Auto picks at 32x32); otherwise, and for resnet-small (3 basic stages of
width 16/32/64 on 1x28x28, teetrain's preset), the hand-written copy below, in torchvision's layout. The
output says which model ran.

Prints the machine (CPU model, AVX-512 or AVX2), the thread settings, the BLAS and oneDNN PyTorch was
built with, which oneDNN implementations one training step executed (from oneDNN's verbose log), and
images/s as the median of --repeats timed blocks with their spread and the load average: the machine
may be shared, so compare only with numbers taken in the same minutes.
"""
import argparse
import collections
import json
import os
import statistics
import tempfile
import time

# teetrain's OpenMP workers spin 1000 polls before they sleep (tools/cli/main.cpp); give PyTorch's
# the same, before its libgomp loads, so the two are compared on the same waiting policy.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

try:
    import torchvision
except ImportError:  # Debian: apt-get install python3-torchvision
    torchvision = None


class Basic(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """torchvision's ResNet with basic blocks, any number of stages (teetrain's models/resnet layout)."""

    def __init__(self, classes, stem, layers=(2, 2, 2, 2), width=64, in_ch=3):
        super().__init__()
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_ch, width, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(in_ch, width, 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(width)
        stages, cin = [], width
        for s, n in enumerate(layers):
            planes = width << s
            stages.append(nn.Sequential(*[Basic(cin if i == 0 else planes, planes, 2 if s > 0 and i == 0 else 1)
                                          for i in range(n)]))
            cin = planes
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.stages(self.maxpool(F.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_model(args):
    """(model, input channels, description)."""
    if args.model == "resnet-small":
        return ResNet(10, "cifar", (1, 1, 1), 16, 1), 1, "hand-written resnet-small (teetrain's preset)"
    if torchvision is not None and not args.hand_written:
        m = torchvision.models.resnet18(num_classes=10)
        if args.stem == "cifar":
            m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            m.maxpool = nn.Identity()
        return m, 3, f"torchvision {torchvision.__version__} resnet18"
    why = "--hand-written" if args.hand_written else "python3-torchvision not installed"
    return ResNet(10, args.stem), 3, f"hand-written resnet18 ({why})"


def machine():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{model}, {os.cpu_count()} hardware threads, {isa}"


def build_config():
    """The BLAS / oneDNN lines of torch.__config__.show()."""
    keep = ("BLAS_INFO", "USE_MKLDNN", "USE_OPENMP", "CPU capability", "oneDNN", "MKL-DNN", "OpenMP")
    lines = [l.strip().rstrip(",") for l in torch.__config__.show().replace(", ", "\n").splitlines()]
    return "; ".join(l for l in lines if any(k in l for k in keep))


def onednn_paths(step):
    """Counts of the oneDNN primitives one step executed (oneDNN's verbose log, written to fd 1)."""
    with tempfile.TemporaryFile(mode="w+") as log:
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                step()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        counts = collections.Counter()
        for line in log:
            f = line.split(",")
            if len(f) > 5 and f[0] in ("onednn_verbose", "dnnl_verbose") and f[1] == "exec":
                counts[f"{f[3]} {f[4]} {f[5]}"] += 1
    return ", ".join(f"{k} x{n}" for k, n in counts.most_common()) or "none (PyTorch's native kernels)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["resnet18", "resnet-small"], default="resnet18")
    ap.add_argument("--batch", type=int, default=None, help="default 32 (resnet18), 128 (resnet-small)")
    ap.add_argument("--size", type=int, default=None, help="default 32 (resnet18), 28 (resnet-small)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stem", choices=["imagenet", "cifar"], default="imagenet", help="resnet18 only")
    ap.add_argument("--hand-written", action="store_true", help="the copy here even with torchvision")
    ap.add_argument("--steps", type=int, default=10, help="steps per timed block")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="append one JSON record to this file")
    args = ap.parse_args()
    small = args.model == "resnet-small"
    args.batch = args.batch or (128 if small else 32)
    args.size = args.size or (28 if small else 32)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, in_ch, what = build_model(args)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, in_ch, args.size, args.size)
    y = torch.randint(0, 10, (args.batch,))

    def step():
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()  # warm-up (oneDNN primitive creation)
    paths = onednn_paths(step)
    rates = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        rates.append(args.steps * args.batch / (time.perf_counter() - t0))
    med = statistics.median(rates)
    stem = "" if small else f" {args.stem} stem"
    print(f"machine: {machine()}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"torch {torch.__version__}: {build_config()}")
    print(f"threads: torch.get_num_threads() = {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', 'unset')}, "
          f"mkldnn enabled {torch.backends.mkldnn.enabled and torch.backends.mkldnn.is_available()}")
    print(f"oneDNN primitives in one step: {paths}")
    print(f"{what}{stem} {args.size}x{args.size} batch {args.batch} threads {args.threads}: "
          f"{med:.1f} images/s (median of {len(rates)} blocks of {args.steps} steps; "
          f"min {min(rates):.1f}, max {max(rates):.1f})")
    if args.json:
        rec = {"peer": "pytorch", "torch": torch.__version__, "model": what, "stem": None if small else args.stem,
               "size": args.size, "batch": args.batch, "threads": args.threads, "images_per_s": med,
               "blocks": rates, "machine": machine(), "load_average": os.getloadavg(), "onednn": paths}
        with open(args.json, "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
