#!/usr/bin/python3
"""PyTorch 1.13 CPU training throughput for resnet18 at the shapes of tests/bench/bench_resnet.cpp.

    /usr/bin/python3 tools/bench/compare_resnet18_torch.py                 # 32x32, batch 32, 2 threads
    /usr/bin/python3 tools/bench/compare_resnet18_torch.py --stem cifar --steps 10

One step = zero_grad + forward + cross-entropy + backward + SGD(momentum 0.9) on one batch, as in
bench_resnet's BM_Resnet18Imagenet32 / BM_Resnet18Cifar32. The model is torchvision's resnet18 layout
written out here (Debian has no python3-torchvision): --stem imagenet keeps the 7x7/2 conv + maxpool,
--stem cifar uses the 3x3/1 conv without maxpool (what teetrain's ResnetStem::Auto picks at 32x32).
Prints images/s (median of --repeats timed blocks) and the load average, since the machine is shared.
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class ResNet18(nn.Module):
    def __init__(self, classes, stem):
        super().__init__()
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for s, planes in enumerate([64, 128, 256, 512]):
            blocks = [Basic(cin, planes, 2 if s > 0 else 1), Basic(planes, planes, 1)]
            cin = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stem", choices=["imagenet", "cifar"], default="imagenet")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed block")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = ResNet18(10, args.stem)
    if args.size == 224 and args.stem == "imagenet":
        assert sum(p.numel() for p in ResNet18(1000, "imagenet").parameters()) == 11689512
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.size, args.size)
    y = torch.randint(0, 10, (args.batch,))

    def step():
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()  # warm-up (oneDNN primitive creation)
    rates = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        rates.append(args.steps * args.batch / (time.perf_counter() - t0))
    print(f"torch {torch.__version__} resnet18 {args.stem} stem {args.size}x{args.size} batch {args.batch} "
          f"threads {args.threads} (mkldnn {torch.backends.mkldnn.is_available()}): "
          f"{statistics.median(rates):.1f} images/s (blocks: {', '.join(f'{r:.1f}' for r in rates)}); "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
