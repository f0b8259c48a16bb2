#!/usr/bin/env python3
"""Draws the labs' figures (docs/labs/figures/*.svg) from the code and from real runs.

Usage: /usr/bin/python3 tools/figures/make_figures.py [--teetrain build/teetrain] [--out docs/labs/figures]
                                                      [--keep | --work DIR]

Needs python3-matplotlib (scripts/install-deps.sh installs it; it is Debian's /usr/bin/python3's),
and for the run-based parts the teetrain binary and Open MPI's mpirun. Every figure is derived from
something that can drift, so that re-running this script keeps them true:

  trust-boundary.svg   who holds what: ranks as TEEs, links and disk in the adversary's hands
  ring.svg             the ring at P = 4 and the number of every message on every link, as
                       `--adversary flip:N@R` counts them: ring_messages() replays the order of
                       comm/allreduce/ring_allreduce.cpp and comm/allreduce/ring_geometry.cpp, and check_ring() runs
                       real attacks and compares the context each error names with the prediction
  sealed-message.svg   a sealed message's bytes, its nonce and its associated data; the sizes and the
                       field offsets are read from comm/secure/seal_streams.{h,cpp} (make_aad)
  chain-of-trust.svg   vendor root -> device certificate -> evidence -> link key
  trace.svg            one cc step and one fast step of rank 0, from the --trace files of two short
                       runs on emulated H100s (lab 4's runs, one timed step each); the titles state
                       the runs' own numbers from their --summary files (virtual time: the same on
                       every machine, so a stale figure shows)

Exit status 0 when every figure was written and the ring numbering matched every real run; 1
otherwise (naming what differed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = ("trust-boundary.svg", "ring.svg", "sealed-message.svg", "chain-of-trust.svg", "trace.svg")

# Colours, patterns and text size: Note [Figure palette] (palette.py, beside this script).
sys.dont_write_bytecode = True  # no cache of palette.py in the repository
from palette import (BLUE, CLEAR, DARK_GREY, HOSTILE, HOSTILE_EDGE, INK, LIGHT_GREY, MIN_FONT_PT, NEUTRAL,
                     NEUTRAL_EDGE, ORANGE, PURPLE, SKY, TRUSTED, TRUSTED_EDGE, VERMILLION, hatch_ink, rcparams)


def pyplot():
    try:
        import matplotlib
    except ImportError:
        sys.exit("make_figures.py: matplotlib is not importable; run with /usr/bin/python3 "
                 "(Debian's python3-matplotlib, scripts/install-deps.sh)")
    matplotlib.use("Agg")
    # Reproducible, small SVG: text stays text, ids and metadata do not change from run to run.
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "teetrain", "font.family": "DejaVu Sans",
                                **rcparams()})
    import matplotlib.pyplot as plt
    return plt


def save(fig, out: str, name: str) -> None:
    fig.savefig(os.path.join(out, name), format="svg", bbox_inches="tight", metadata={"Date": None})
    import matplotlib.pyplot as plt
    plt.close(fig)
    print(f"wrote {os.path.join(out, name)}")


def box(ax, x, y, w, h, text, face=NEUTRAL, edge=NEUTRAL_EDGE, size=9, weight="normal", ls="-", lw=1.2):
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", fc=face, ec=edge,
                                lw=lw, ls=ls))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight, color=INK,
            wrap=True)


def arrow(ax, x0, y0, x1, y1, text="", color=NEUTRAL_EDGE, ls="-", rad=0.0, size=MIN_FONT_PT, offset=(0, 0.12),
          both=False):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops={"arrowstyle": "<|-|>" if both else "-|>", "color": color, "lw": 1.3, "ls": ls,
                            "connectionstyle": f"arc3,rad={rad}", "shrinkA": 2, "shrinkB": 2})
    if text:
        ax.text((x0 + x1) / 2 + offset[0], (y0 + y1) / 2 + offset[1], text, ha="center", va="center",
                fontsize=size, color=color)


def canvas(plt, w, h, xmax, ymax):
    fig, ax = plt.subplots(figsize=(w, h))
    ax.set_xlim(0, xmax)
    ax.set_ylim(0, ymax)
    ax.axis("off")
    return fig, ax


# ---------------------------------------------------------------------------------------------------
# 1. The trust boundary


def trust_boundary(plt, out: str) -> None:
    fig, ax = canvas(plt, 10, 6.6, 10, 6.0)
    ax.set_ylim(-0.6, 6.0)
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((0.1, 0.1), 9.8, 4.3, fc=HOSTILE, ec=HOSTILE_EDGE, lw=1.2, ls="--"))
    ax.text(0.25, 4.3, "the ADVERSARY's: links (PCIe, NVLink, host memory, network) and disks;\n"
            "it may read, flip, drop, replay, reorder, delay (labs 1, 2, 5)", fontsize=MIN_FONT_PT,
            color=HOSTILE_EDGE, va="top", weight="bold")
    ax.text(0.25, 3.78, "what crosses the links: gradients (ring all-reduce), the initial parameter broadcast, "
            "barriers,\nthe attestation handshake", fontsize=MIN_FONT_PT, color=HOSTILE_EDGE, va="top")
    xs = [0.6, 3.9, 7.2]
    for i, x in enumerate(xs):
        box(ax, x, 2.0, 2.2, 1.3, f"rank {i}: a TEE\n(one GPU package)\nparameters, gradients,\n"
            "batches, keys: in clear", TRUSTED, TRUSTED_EDGE, size=MIN_FONT_PT)
    for a, b in ((0, 1), (1, 2)):
        arrow(ax, xs[a] + 2.2, 2.65, xs[b], 2.65, "sealed\nmessages", HOSTILE_EDGE, offset=(0, 0.3))
    ax.annotate("", xy=(xs[0] + 1.1, 2.0), xytext=(xs[2] + 1.1, 2.0),
                arrowprops={"arrowstyle": "-|>", "color": HOSTILE_EDGE, "lw": 1.3,
                            "connectionstyle": "arc3,rad=-0.18", "shrinkA": 2, "shrinkB": 2})
    ax.text(5.0, 1.2, "link 2 -> 0 closes the ring", ha="center", va="center", fontsize=MIN_FONT_PT, color=HOSTILE_EDGE)
    box(ax, 0.6, 0.3, 3.1, 0.75, "disk: sealed token shards\n(seal-data, lab 5)", NEUTRAL, HOSTILE_EDGE, size=MIN_FONT_PT)
    box(ax, 6.3, 0.3, 3.1, 0.75, "disk: sealed checkpoints +\nmanifest chain (lab 5)", NEUTRAL, HOSTILE_EDGE,
        size=MIN_FONT_PT)
    arrow(ax, 2.2, 1.05, 1.5, 2.0, "ingress", HOSTILE_EDGE, offset=(-0.45, 0))
    arrow(ax, 8.3, 2.0, 7.9, 1.05, "save", HOSTILE_EDGE, offset=(0.35, 0))
    # Outside the adversary's zone: who vouches and who owns the data.
    box(ax, 0.3, 4.75, 3.2, 1.1, "vendor (provision, lab 3)\nroot certificate, revocation list;\n"
        "root key never on a training host", NEUTRAL, NEUTRAL_EDGE, size=MIN_FONT_PT)
    box(ax, 6.5, 4.75, 3.2, 1.1, "data owner\nmaster key (keygen): releases the\n"
        "dataset key to attested ranks only", NEUTRAL, NEUTRAL_EDGE, size=MIN_FONT_PT)
    box(ax, 3.75, 4.75, 2.5, 1.1, "verifier = every rank:\nchecks its ring neighbours'\nevidence (lab 3)",
        NEUTRAL, NEUTRAL_EDGE, size=MIN_FONT_PT)
    arrow(ax, 1.9, 4.75, 1.7, 3.3, "certifies", NEUTRAL_EDGE, ls=":", offset=(0.45, 0.62))
    arrow(ax, 8.1, 4.75, 8.3, 3.3, "key, sealed", NEUTRAL_EDGE, ls=":", offset=(-0.55, 0.62))
    ax.text(5.0, 0.0, "in clear on the wire even with the TEE on: who talks to whom, when, how much;\n"
            "the 12-byte header of each sealed message; the handshake", ha="center", fontsize=MIN_FONT_PT,
            color=HOSTILE_EDGE, va="top")
    save(fig, out, "trust-boundary.svg")


# ---------------------------------------------------------------------------------------------------
# 2. The ring and its message numbers


@dataclass(frozen=True)
class Context:
    """comm/channel.h's MessageContext, as to_string() prints it (length left out)."""
    step: int
    bucket: int
    phase: str
    hop: int
    chunk: int
    segment: int
    origin: int
    sender: int
    receiver: str

    def text(self) -> str:
        return (f"step {self.step}, bucket {self.bucket}, phase {self.phase}, hop {self.hop}, chunk {self.chunk}, "
                f"segment {self.segment}, origin {self.origin}, sender {self.sender}, receiver {self.receiver}")


def ring_messages(p: int, rank: int, steps: int, buckets: int = 1, segments: int = 1,
                  forward_ag: bool = False) -> list[Context]:
    """The gradient messages rank `rank` sends to rank+1, in the order `--adversary` counts them (N = index+1).

    comm/allreduce/ring_allreduce.cpp: per bucket (launched in order, one at a time), scatter-reduce hops
    s = 0..P-2 then all-gather hops s = 0..P-2, each sending segments 0..S-1 of one chunk.
    comm/allreduce/ring_geometry.cpp: scatter-reduce hop s sends chunk (r - s) mod P, all-gather hop s chunk
    (r + 1 - s) mod P; the owner of a finished chunk c is (c - 1) mod P. With forward-ag (fast), an
    all-gather message is the owner's sealed object: hop 0, origin = sender = owner, receiver any.
    """
    out: list[Context] = []
    nxt = (rank + 1) % p
    for step in range(steps):
        for bucket in range(buckets):
            for phase in ("scatter_reduce", "all_gather"):
                for s in range(p - 1):
                    if phase == "scatter_reduce":
                        chunk = (rank - s) % p
                    else:
                        chunk = (rank + 1 - s) % p
                    owner = (chunk - 1) % p
                    for seg in range(segments):
                        if phase == "all_gather" and forward_ag:
                            out.append(Context(step, bucket, phase, 0, chunk, seg, owner, owner, "any"))
                        else:
                            origin = owner if phase == "all_gather" else rank
                            out.append(Context(step, bucket, phase, s, chunk, seg, origin, rank, str(nxt)))
    return out


def ring(plt, out: str) -> None:
    import math
    p = 4
    fig, ax = canvas(plt, 11, 7.4, 11, 7.4)
    cx, cy, rad = 3.2, 3.6, 1.9
    pos = [(cx + rad * math.sin(2 * math.pi * r / p), cy + rad * math.cos(2 * math.pi * r / p)) for r in range(p)]
    for r, (x, y) in enumerate(pos):
        from matplotlib.patches import Circle
        ax.add_patch(Circle((x, y), 0.42, fc=TRUSTED, ec=TRUSTED_EDGE, lw=1.4))
        ax.text(x, y, f"rank {r}", ha="center", va="center", fontsize=9, weight="bold")
    short = {"scatter_reduce": "SR", "all_gather": "AG"}
    for r in range(p):
        (x0, y0), (x1, y1) = pos[r], pos[(r + 1) % p]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "-|>", "color": HOSTILE_EDGE, "lw": 1.6,
                                "connectionstyle": "arc3,rad=-0.25", "shrinkA": 24, "shrinkB": 24})
        msgs = ring_messages(p, r, 1)
        label = f"link {r} -> {(r + 1) % p}\n" + "\n".join(
            f"{n + 1}: {short[m.phase]} hop {m.hop}, chunk {m.chunk}" for n, m in enumerate(msgs))
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        dx, dy = mx - cx, my - cy
        norm = math.hypot(dx, dy)
        lx, ly = cx + dx / norm * (rad + 1.15), cy + dy / norm * (rad + 1.15)
        ax.text(lx, ly, label, ha="center", va="center", fontsize=MIN_FONT_PT, family="DejaVu Sans Mono",
                bbox={"fc": "white", "ec": HOSTILE_EDGE, "lw": 0.8, "boxstyle": "round,pad=0.3"})
    ax.text(cx, cy, "P = 4\none bucket,\none segment\nper chunk", ha="center", va="center", fontsize=MIN_FONT_PT,
            color=NEUTRAL_EDGE)
    p2 = ring_messages(2, 0, 2)
    text = (
        "`--adversary ATTACK:N@R` acts on the N-th gradient message\n"
        "rank R sends to rank R+1 (counted from 1 over the whole\n"
        "run; broadcast, barriers and attestation not counted).\n\n"
        "Per step and bucket each link carries 2(P-1) messages:\n"
        "  k = 0 .. P-2      scatter-reduce (SR) hop k,\n"
        "                    chunk (R - k) mod P: a partial sum\n"
        "  k = P-1 .. 2P-3   all-gather (AG) hop k-(P-1),\n"
        "                    chunk (R + 1 - hop) mod P: finished\n"
        "so with one bucket, N = 2(P-1) x step + k + 1.\n"
        "Chunk c is finished by its owner, rank (c - 1) mod P.\n\n"
        "With --tee fast (forward-ag) an AG message is the owner's\n"
        "sealed object, forwarded unchanged: the error names it\n"
        "as hop 0, sender = origin = owner, receiver any.\n\n"
        "Lab 2 at P = 2 (one bucket): link 0 -> 1 carries\n" +
        "\n".join(f"  N = {n + 1}: step {m.step}, {short[m.phase]} hop {m.hop}, chunk {m.chunk}"
                  for n, m in enumerate(p2)) +
        "\nso flip:3 hits step 1, scatter-reduce, hop 0, chunk 0.")
    ax.text(7.0, 7.1, text, ha="left", va="top", fontsize=MIN_FONT_PT, family="DejaVu Sans Mono")
    ax.text(7.0, 0.25, "Numbering derived from comm/allreduce/ring_allreduce.cpp and ring_geometry.cpp\n"
            "and checked against real runs by tools/figures/make_figures.py.", fontsize=MIN_FONT_PT, color=NEUTRAL_EDGE)
    save(fig, out, "ring.svg")


# Real attacks whose error line must name the context ring_messages() predicts: (ranks, tee, N, R).
RING_CHECKS = ((2, "cc", 3, 0), (3, "cc", 4, 1), (3, "fast", 4, 2), (4, "fast", 4, 3))


def check_ring(teetrain: str, work: str) -> list[str]:
    """Runs each RING_CHECKS attack; returns what differed from the prediction (empty: all matched)."""
    problems = []
    for ranks, tee, n, r in RING_CHECKS:
        predicted = ring_messages(ranks, r, n, forward_ag=(tee == "fast"))[n - 1]
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), teetrain, "train", "--model", "gpt2-tiny",
               "--data", "data/clinic", "--allow-plain-data", "--batch", "2", "--seq", "32", "--steps", "3",
               "--threads", "1", "--no-progress", "--tee", tee, "--trust-root", "vendor/vendor_root.crt",
               "--device-identity", "vendor/device_{rank}.pem", "--adversary", f"flip:{n}@{r}"]
        res = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=120)
        got = re.search(r"failed to open \(tag mismatch[^)]*\) at (step [^\n]*?), \d+ bytes", res.stdout + res.stderr)
        spec = f"P = {ranks}, --tee {tee}, flip:{n}@{r}"
        if res.returncode != 3 or not got:
            problems.append(f"{spec}: expected exit 3 and a tag mismatch, got exit {res.returncode}:\n"
                            + (res.stdout + res.stderr)[-1500:])
        elif got.group(1) != predicted.text():
            problems.append(f"{spec}: the run names\n    {got.group(1)}\n  the figure predicts\n    {predicted.text()}")
        else:
            print(f"ring numbering: {spec} -> {predicted.text()} (as the figure says)")
    return problems


# ---------------------------------------------------------------------------------------------------
# 3. A sealed message


def seal_layout() -> tuple[dict[str, int], list[tuple[int, int, str]]]:
    """Sizes and the associated data's fields (offset, bytes, name), read from comm/secure/seal_streams.*."""
    with open(os.path.join(REPO, "comm", "secure", "seal_streams.h"), encoding="utf-8") as f:
        header = f.read()
    with open(os.path.join(REPO, "comm", "secure", "seal_streams.cpp"), encoding="utf-8") as f:
        source = f.read()
    sizes = {k: int(v) for k, v in re.findall(r"constexpr std::size_t (kSeal\w+) = (\d+);", header)}
    with open(os.path.join(REPO, "tee", "crypto", "aead.h"), encoding="utf-8") as f:
        tag = re.search(r"kTagSize = (\d+)", f.read())
    sizes["tag"] = int(tag.group(1)) if tag else 0
    body = source[source.index("make_aad("):]
    body = body[:body.index("\n}\n")]
    fields: list[tuple[int, int, str]] = [(0, 4, '"TTM1"'), (4, 16, "run id")]
    base = 20  # after the magic and the run id: the stores below are relative to p
    for m in re.finditer(r"store_be(32|64)\(p(?: \+ (\d+))?, (?:rank_field\()?([\w.]+)", body):
        fields.append((base + int(m.group(2) or 0), int(m.group(1)) // 8, m.group(3)))
    for m in re.finditer(r"p\[(\d+)\] = static_cast<std::uint8_t>\(([\w.]+)\)", body):
        fields.append((base + int(m.group(1)), 1, m.group(2)))
    fields.sort()
    names = {"epoch": "key epoch", "c.step": "step", "c.bucket": "bucket", "c.phase": "phase", "c.hop": "hop",
             "c.chunk": "chunk", "c.segment": "segment", "c.origin": "origin", "c.sender": "sender",
             "c.receiver": "receiver", "length": "length", "cipher": "cipher", "kind": "stream kind"}
    return sizes, [(o, n, names.get(f, f)) for o, n, f in fields]


def sealed_message(plt, out: str) -> None:
    sizes, fields = seal_layout()
    header, aad_size, tag = sizes.get("kSealHeaderSize"), sizes.get("kSealAadSize"), sizes["tag"]
    overhead = (header or 0) + tag  # kSealOverhead = tee::kTagSize + kSealHeaderSize
    end = fields[-1][0] + fields[-1][1] if fields else 0
    if not (header == 12 and tag == 16 and aad_size == end and all(
            a[0] + a[1] == b[0] for a, b in zip(fields, fields[1:]))):
        sys.exit(f"make_figures.py: comm/secure/seal_streams.* changed shape (header {header}, tag {tag}, "
                 f"AD {aad_size} bytes, fields end at {end}): update sealed_message()")
    fig, ax = canvas(plt, 12, 5.6, 12, 5.6)
    from matplotlib.patches import Rectangle
    y = 4.3
    parts = [(0.3, 5.2, "ciphertext (length bytes)\nAES-256-GCM of the gradient chunk", NEUTRAL, HOSTILE_EDGE),
             (5.5, 1.6, f"tag ({tag})\nover ciphertext,\nnonce and AD", NEUTRAL, HOSTILE_EDGE),
             (7.1, 1.0, "be32\nkey epoch", CLEAR, HOSTILE_EDGE), (8.1, 1.6, "be64\nnonce counter", CLEAR, HOSTILE_EDGE)]
    for x, w, text, face, edge in parts:
        ax.add_patch(Rectangle((x, y), w, 0.8, fc=face, ec=edge, lw=1.2))
        ax.text(x + w / 2, y + 0.4, text, ha="center", va="center", fontsize=MIN_FONT_PT)
    ax.text(0.3, 5.35, f"a sealed message on the wire: plaintext length + {overhead} bytes "
            "(comm/secure/sealed_channel.h)", fontsize=9.5, weight="bold")
    ax.annotate("", xy=(9.7, 4.2), xytext=(7.1, 4.2), arrowprops={"arrowstyle": "<->", "color": INK})
    ax.text(8.4, 3.95, f"clear header ({header} bytes): DIAGNOSTIC ONLY —\nthe receiver never reads it to open",
            ha="center", va="top", fontsize=MIN_FONT_PT)
    ax.text(0.3, 3.35, "never sent — the receiver builds both from its own state (which step, bucket, hop, "
            "which message of the stream it expects):", fontsize=MIN_FONT_PT, weight="bold")
    ax.add_patch(Rectangle((0.3, 2.55), 2.0, 0.55, fc=TRUSTED, ec=TRUSTED_EDGE))
    ax.text(1.3, 2.82, "be32 stream sender", ha="center", va="center", fontsize=MIN_FONT_PT)
    ax.add_patch(Rectangle((2.3, 2.55), 2.4, 0.55, fc=TRUSTED, ec=TRUSTED_EDGE))
    ax.text(3.5, 2.82, "be64 counter (expected)", ha="center", va="center", fontsize=MIN_FONT_PT)
    ax.text(4.85, 2.82, "96-bit nonce: never repeats under a key (tee/detail/nonce.h)", va="center", fontsize=MIN_FONT_PT)
    x0, x1 = 0.3, 11.7
    scale = (x1 - x0) / aad_size
    labelled = -2  # the last offset written below the row: neighbours 1 byte apart would overlap
    for off, n, name in fields:
        ax.add_patch(Rectangle((x0 + off * scale, 1.45), n * scale, 0.6, fc=TRUSTED, ec=TRUSTED_EDGE, lw=0.8))
        if n >= 4:
            ax.text(x0 + (off + n / 2) * scale, 1.75, name, ha="center", va="center", fontsize=MIN_FONT_PT, rotation=90
                    if n * scale < 0.45 else 0)
        if off - labelled >= 2:
            ax.text(x0 + off * scale, 1.38, str(off), ha="left", va="top", fontsize=MIN_FONT_PT, color=NEUTRAL_EDGE)
            labelled = off
    singles = ", ".join(name for off, n, name in fields if n < 4)
    ax.text(0.3, 2.2, f"associated data ({aad_size} bytes, big-endian; byte offsets below; "
            f"1-byte fields: {singles})", fontsize=MIN_FONT_PT)
    ax.text(0.3, 0.95, "A message opens only where it was sealed for: change one bit of the ciphertext or the "
            "tag, deliver it at\nanother step/hop/chunk, from another sender, twice, late or early — the "
            "receiver's nonce or AD differs and\nthe tag check fails (lab 2). Receiver 'any': an all-gather "
            "object forwarded unchanged (--tee fast).", fontsize=MIN_FONT_PT, va="top")
    save(fig, out, "sealed-message.svg")


# ---------------------------------------------------------------------------------------------------
# 4. The chain of trust


def chain_of_trust(plt, out: str) -> None:
    fig, ax = canvas(plt, 11.2, 4.4, 11.2, 4.4)
    y, w, step = 2.1, 2.3, 2.95
    steps = [
        ("vendor root CA\nvendor_root.crt\n(self-signed, Ed25519)\n+ vendor_root.crl", NEUTRAL, NEUTRAL_EDGE),
        ("device identity\ndevice_<i>.pem\nkey + leaf certificate\n(CA:FALSE, serial)", TRUSTED, TRUSTED_EDGE),
        ("evidence (TTEVID02)\nrank, SHA-256 of binary\nand config, verifier\nnonce, X25519 key", TRUSTED,
         TRUSTED_EDGE),
        ("link key\nX25519 + HKDF-SHA256\nsalted with both\nevidences", TRUSTED, TRUSTED_EDGE),
    ]
    for i, (text, face, edge) in enumerate(steps):
        box(ax, 0.1 + i * step, y, w, 1.4, text, face, edge, size=MIN_FONT_PT)
    labels = ["root key\nsigns", "device key\nsigns", "verified:\nagree"]
    for i, label in enumerate(labels):
        x = 0.1 + i * step + w
        arrow(ax, x, y + 0.7, x + step - w, y + 0.7)
        ax.text(x + (step - w) / 2, y + 1.05, label, ha="center", va="bottom", fontsize=MIN_FONT_PT)
    checks = ("The verifier (each ring neighbour, or teetrain attest --verify) checks, and names the first "
              "failure:\n"
              "  1. the certificate chains to the trusted root ..... another vendor's device, the relay's own root\n"
              "  2. it is not on the root's revocation list ........ a leaked, revoked device\n"
              "  3. the evidence is signed by the certified key .... a genuine certificate, another key "
              "(mitm:cert)\n"
              "  4. it answers this verifier's fresh nonce ......... recorded evidence (replay)\n"
              "  5. binary and config match the policy ............. a modified binary, other flags\n"
              "Then every link confirms its key (both ends derived the same) before any gradient is sealed;\n"
              "rank 0 (the data owner) releases the dataset and group keys only over attested links.")
    ax.text(0.1, 1.85, checks, ha="left", va="top", fontsize=MIN_FONT_PT, family="DejaVu Sans Mono")
    ax.text(0.1, 4.2, "who vouches for what (lab 3); the vendor's secret root key (vendor_secret/root.key) "
            "never reaches a training host", fontsize=9, weight="bold", va="top")
    save(fig, out, "chain-of-trust.svg")


# ---------------------------------------------------------------------------------------------------
# 5. An annotated trace


def run(cmd: list[str], cwd: str, timeout: float = 240) -> str:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        sys.exit(f"make_figures.py: `{' '.join(cmd)}` failed with exit {res.returncode}:\n"
                 f"{(res.stdout + res.stderr)[-2000:]}")
    return res.stdout + res.stderr


def prepare(teetrain: str, work: str) -> None:
    """The records of lab 1 as token shards, and a vendor with four devices."""
    os.makedirs(os.path.join(work, "records"), exist_ok=True)
    with open(os.path.join(work, "records", "clinic.txt"), "w", encoding="utf-8") as f:
        for i in range(1, 401):
            f.write(f"Patient {i:03d}, born 19{i % 90 + 10:02d}: diagnosis confidential, dose {i * 7 % 500} mg.\n%\n")
    run([teetrain, "prepare-text", "records", "--out", "data", "--name", "clinic"], work)
    run([teetrain, "provision", "--out", "vendor", "--devices", "4"], work)


@dataclass
class TracedStep:
    spans: list[dict]     # rank 0's spans that overlap the timed step
    lanes: dict[int, str]  # thread id -> lane name
    start: float           # us: the end of the previous step's optimizer, as the run's summary times a step
    end: float             # us: the end of this step's optimizer
    summary: dict          # the run's --summary: the numbers the figure states


def traced_step(teetrain: str, work: str, tee: str) -> TracedStep:
    """The last (timed) step of rank 0 of a short run on emulated H100s, from its --trace file."""
    trace = os.path.join(work, f"{tee}.trace.json")
    run(["mpirun", "-np", "2", teetrain, "train", "--model", "gpt2", "--data", "data/clinic", "--allow-plain-data",
         "--batch", "4", "--seq", "1024", "--steps", "2", "--timing-warmup", "1", "--val-batches", "0",
         "--no-progress", "--compute", "emulate", "--gpu", "h100", "--link", "emulate", "--tee", tee,
         "--trust-root", "vendor/vendor_root.crt", "--device-identity", "vendor/device_{rank}.pem",
         "--trace", trace, "--summary", os.path.join(work, f"{tee}.summary.json")]
        # Lab 4's fast: GPUs joined by a direct encrypted link, the what-if teetrain's design assumes
        # (on H100 CC, fast's ciphertext crosses the bounce buffers: docs/reproducing.md).
        + (["--cc-hardware", "direct-what-if"] if tee == "fast" else []), work)
    with open(trace, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name" and e["pid"] == 0}
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] == 0]
    optimizers = sorted(e["ts"] + e["dur"] for e in spans if e["name"] == "optimizer")
    if len(optimizers) < 2:
        sys.exit(f"make_figures.py: {trace} has fewer than two optimizer spans on rank 0 (a warm-up and a timed step)")
    start, end = optimizers[-2], optimizers[-1]
    with open(os.path.join(work, f"{tee}.summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    return TracedStep([e for e in spans if e["ts"] + e["dur"] > start and e["ts"] < end], lanes, start, end, summary)


def span_kind(name: str) -> str | None:
    """Which series of the trace figure a span belongs to (a key of TRACE_STYLE), or None: not drawn.

    Crypto spans are named by what they do and where it is charged: `seal` / `open` measured on this
    CPU (--time wall), `seal (modelled host)` / `open (modelled host)` for the host that seals an
    emulated GPU's messages (cc), `... (modelled GPU)` / `... (emulated GPU)` for device crypto (fast)."""
    if name.startswith("bucket"):
        return "bucket"
    op, _, where = name.partition(" (")
    if op in ("seal", "open"):
        return "crypto on the GPU" if "GPU" in where else f"{op} on the host"
    return name if name in TRACE_STYLE else None


# What each series of the trace is drawn as: (colour, hatch, legend label, drawing order), one colour per
# series, no two alike under deuteranopia (Note [Figure palette]; figures_test.py checks it).
TRACE_STYLE = {
    "forward": (SKY, "", "forward", 0), "backward": (BLUE, "", "backward", 0),
    "comm_exposed": (VERMILLION, "////", "comm_exposed (waiting)", 0), "optimizer": (PURPLE, "", "optimizer", 0),
    "bucket": (TRUSTED, "", "bucket N (all-reduce)", 0), "reduce": (DARK_GREY, "", "reduce (add)", 1),
    "seal on the host": (ORANGE, "", "seal on the host", 0),
    "open on the host": (LIGHT_GREY, "xxx", "open on the host", 0), "crypto on the GPU": (INK, "", "seal/open on the GPU", 0),
}


def trace_title(tee: str, step: TracedStep) -> str:
    """The run's own numbers, from its summary (what `teetrain train` printed in its phase table; rank 0's
    mean over the timed steps): the step, its exposed communication, and the sealing and opening, which
    ran on the modelled host (cc) or on the GPU (fast) as the trace's crypto spans say."""
    ms = {k: v["mean"] * 1e3 for k, v in step.summary["phases"].items()}
    step_ms = step.summary["step_s_mean"] * 1e3
    on_gpu = any(span_kind(e["name"]) == "crypto on the GPU" for e in step.spans)
    return (f"--tee {tee}: one step = {step_ms:.1f} ms, of which comm_exposed {ms['comm_exposed']:.1f} ms "
            f"({ms['comm_exposed'] / step_ms:.0%});\nseal {ms['seal']:.1f} ms + open {ms['open']:.1f} ms, "
            + ("on the GPU (modelled), over a direct GPU-to-GPU link (what-if)" if on_gpu
               else f"on the host (modelled: {host_rate(step.summary)})"))


def host_rate(summary: dict) -> str:
    """The modelled host's AES-GCM rate and cores, as the run's gradient path names them."""
    m = re.search(r"host AES-GCM ([\d.]+ GB/s x \d+ cores?)", summary.get("gradient_path", ""))
    return m.group(1) if m else "the host"


def trace(plt, out: str, teetrain: str, work: str) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(10, 7.0))
    seen: dict[str, tuple[str, str]] = {}
    for ax, tee in zip(axes, ("cc", "fast")):
        step = traced_step(teetrain, work, tee)
        events, lanes, start, end = step.spans, step.lanes, step.start, step.end
        order = sorted(lanes)
        rows = {tid: i for i, tid in enumerate(order)}
        groups: dict[tuple[int, str, str, int], list[tuple[float, float]]] = {}
        for e in events:
            kind = span_kind(e["name"])
            if kind is None or e["tid"] not in rows:
                continue
            colour, hatch, label, layer = TRACE_STYLE[kind]
            seen[label] = (colour, hatch)
            groups.setdefault((layer, colour, hatch, rows[e["tid"]]), []).append(
                ((e["ts"] - start) / 1e3, e["dur"] / 1e3))
        for (layer, colour, hatch, row), bars in sorted(groups.items()):
            # Rasterised bars keep the SVG small (a cc step has hundreds of spans); text stays text.
            ax.broken_barh(bars, (row - 0.38, 0.76), facecolors=colour,
                           edgecolors=hatch_ink(colour) if hatch else "none", hatch=hatch or None, linewidth=0,
                           rasterized=True)
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels([lanes[t] for t in order])
        ax.invert_yaxis()
        step_ms = (end - start) / 1e3
        ax.set_xlim(0, step_ms * 1.01)
        ax.set_xlabel("ms since the step began (rank 0)")
        ax.set_title(trace_title(tee, step), fontsize=9, loc="left")
        biggest = max((e for e in events if e["name"] == "comm_exposed"), key=lambda e: e["dur"], default=None)
        if biggest is not None and biggest["dur"] / 1e3 > 0.3 * step_ms:
            ax.text((biggest["ts"] - start + biggest["dur"] / 2) / 1e3, rows[biggest["tid"]],
                    "comm_exposed: backward is done; the training thread\nwaits for the sealed all-reduce",
                    ha="center", va="center", fontsize=9, bbox={"fc": "white", "ec": "none", "alpha": 0.85})
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(facecolor=c, edgecolor=hatch_ink(c) if h else c, hatch=h or None, label=l)
                        for l, (c, h) in seen.items()], loc="lower center", ncol=5, fontsize=9, frameon=False)
    fig.suptitle("gpt2 (124M), 2 ranks, 4 x 1024 tokens per rank, emulated H100s:\nthe timed step of each run, "
                 "rank 0's threads (virtual time: the same on every machine)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    save(fig, out, "trace.svg")


# ---------------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teetrain", default=os.path.join(REPO, "build", "teetrain"), help="the binary")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "labs", "figures"), help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the runs' working directory")
    ap.add_argument("--work", help="run in this (empty or new) directory and keep it: the traces, the runs' "
                    "summaries ({cc,fast}.summary.json)")
    args = ap.parse_args()
    teetrain = os.path.abspath(args.teetrain)
    if not os.access(teetrain, os.X_OK):
        sys.exit(f"make_figures.py: {args.teetrain}: not an executable (build it, or pass --teetrain)")
    if shutil.which("mpirun") is None:
        sys.exit("make_figures.py: mpirun not found (Open MPI: scripts/install-deps.sh)")
    plt = pyplot()
    os.makedirs(args.out, exist_ok=True)
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = os.path.abspath(args.work)
        args.keep = True
    else:
        work = tempfile.mkdtemp(prefix="teetrain-figures-")
    try:
        trust_boundary(plt, args.out)
        ring(plt, args.out)
        sealed_message(plt, args.out)
        chain_of_trust(plt, args.out)
        prepare(teetrain, work)
        trace(plt, args.out, teetrain, work)
        problems = check_ring(teetrain, work)
    finally:
        if args.keep:
            print(f"(working directory kept: {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)
    missing = [f for f in FIGURES if not os.path.isfile(os.path.join(args.out, f))]
    for p in problems:
        print(f"RING NUMBERING DIFFERS: {p}", file=sys.stderr)
    if missing:
        print(f"make_figures.py: not written: {', '.join(missing)}", file=sys.stderr)
    return 1 if problems or missing else 0


if __name__ == "__main__":
    sys.exit(main())
