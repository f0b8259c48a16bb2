#!/usr/bin/env python3
"""What one snooped gradient message gives away: which bytes were in a rank's batch (lab 1).

Usage:
  leak.py CAPTURE [--vocab 256 --dim 32]                       recover the bytes
  leak.py CAPTURE --data SHARD.bin --seq T --batch B --world P  ... and score them against the batch

CAPTURE is a raw gradient message that `teetrain train --adversary snoop:DIR` wrote, e.g.
DIR/link_0_to_1_gradients_first.bin: the first message rank 0 sent on its ring link, i.e. its own,
not yet averaged gradient of the first bucket's chunk 0 at step 0 (docs/labs/figures/ring.svg).
For a byte-level GPT-2 (gpt2-tiny: vocabulary 256, 32 dimensions) with one bucket, that chunk starts
with the token embedding's gradient: a (vocab x dim) float32 matrix at offset 0 of the flat gradient
buffer. The model's layout is public, as is the wire format (Kerckhoffs).

Why rows leak although the gradient is dense. GPT-2 ties its output layer to the token embedding
(logits = h . wte^T), so every row v of the embedding's gradient gets a share of the output layer's
gradient, sum over positions of softmax_v * h / (B*T): no row is zero. At initialisation the softmax
is nearly uniform (about 1/vocab for every byte), so the rows of bytes that are *not* in the batch all
get nearly the *same* vector. A byte that is a prediction target gets -h / (B*T) at each of its
positions on top, and a byte that is an input gets the gradient of its input position: its row moves
away from the crowd. The attack takes the median row (per coordinate: the majority of rows are bytes
not in the batch), measures each row's distance from it, and cuts at the first jump of more than
--jump (x2) between neighbouring sorted distances above the median: the rows beyond are the bytes
the rank trained on. No zero is needed, and none occurs.

With the TEE on, the same bytes are AES-GCM ciphertext: they do not decode as gradients at all
(about 17% of the words are plausible float32 gradients, what random bytes give, against ~100% in
clear). The script says so, then runs the same attack on them anyway, as an attacker who ignored the
warning would: what it "recovers" is as good as bytes drawn at random, and with --data it prints
the precision such a random guess would have beside its own.

The real batch (to score the attack, as the lab does): teetrain's data order is a pure function of
(data, --seq, --seed) (data/window_order.h): sample g of epoch 0 is window perm(g), where perm is a
Fisher-Yates shuffle of the W = (N - 1) // T windows drawn from SplitMix64 seeded with
derive_seed(seed, "data", 0) (core/rng.h), and rank r's first batch is samples
[r*B, (r+1)*B). The few lines below reproduce that, in the standard library only.
"""

from __future__ import annotations

import argparse
import math
import statistics
import struct
import sys

MASK = (1 << 64) - 1
DATA_STREAM = 0x64617461  # "data": WindowOrder::kDataStream
SHARD_HEADER_BYTES = 1024  # 256 x int32 (data/token_shard.h)


class SplitMix64:
    """tt::Rng (core/rng.h): the same stream for the same seed."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next_u64() % n


def derive_seed(base: int, a: int, b: int = 0) -> int:
    r = SplitMix64(base ^ ((a * 0xD1B54A32D192ED03) & MASK) ^ ((b * 0x8CB92BA72F3D8DD7) & MASK))
    r.next_u64()
    return r.next_u64()


def bad_input(message: str) -> None:
    """One line naming the problem and what to do, exit 2 (bad input), as teetrain itself does."""
    print(f"leak.py: {message}", file=sys.stderr)
    sys.exit(2)


# What each input is, and where it comes from: the hint of the error when it cannot be read.
INPUTS = {
    "capture": "a run with --adversary snoop:DIR writes DIR/link_0_to_1_gradients_first.bin",
    "training shard": "give --data the shard the run trained on, data/NAME_train.bin",
}


def read_bytes(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        bad_input(f"cannot read the {what} {path}: {e.strerror} ({INPUTS[what]})")
        raise  # not reached: bad_input exits


def read_tokens(path: str) -> list[int]:
    raw = read_bytes(path, "training shard")
    if len(raw) < SHARD_HEADER_BYTES:
        bad_input(f"{path}: {len(raw)} bytes, too short for a token shard's header")
    magic, version, count = struct.unpack_from("<3i", raw, 0)
    if magic != 20240520 or version != 1:
        bad_input(f"{path}: not a teetrain/llm.c token shard (magic {magic}, version {version})")
    return list(struct.unpack_from(f"<{count}H", raw, SHARD_HEADER_BYTES))


def batch_bytes(tokens: list[int], seq: int, batch: int, rank: int, seed: int) -> set[int]:
    """The bytes (inputs and targets) of rank `rank`'s batch at step 0."""
    windows = (len(tokens) - 1) // seq
    perm = list(range(windows))
    rng = SplitMix64(derive_seed(seed, DATA_STREAM, 0))
    for i in range(windows - 1, 0, -1):
        j = rng.below(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    seen: set[int] = set()
    for g in range(rank * batch, (rank + 1) * batch):
        w = perm[g % windows]
        seen.update(tokens[w * seq: w * seq + seq + 1])
    return seen


def plausible(x: float) -> bool:
    """comm/adversary/snoop.h's test: zero, or finite with 1e-12 <= |x| <= 10."""
    return x == 0.0 or (math.isfinite(x) and 1e-12 <= abs(x) <= 10.0)


def row_distances(values: tuple[float, ...], vocab: int, dim: int) -> list[float]:
    """Each row's distance from the median row (the common part of every row cancels). Words that are
    no finite number (ciphertext read as floats) count as 0, and huge ones are clipped, so that the
    attack runs on any bytes."""
    values = tuple(max(-1e6, min(1e6, x)) if math.isfinite(x) else 0.0 for x in values)
    rows = [values[r * dim:(r + 1) * dim] for r in range(vocab)]
    median = [statistics.median(row[c] for row in rows) for c in range(dim)]
    return [math.sqrt(sum((x - m) ** 2 for x, m in zip(row, median))) for row in rows]


def gap_cut(dists: list[float], jump: float) -> float:
    """The threshold at the first jump (ratio of neighbouring sorted values) above `jump`, going up
    from the median: the rows of bytes not in the batch are the majority and lie close together."""
    xs = sorted(dists)
    for a, b in zip(xs[len(xs) // 2:], xs[len(xs) // 2 + 1:]):
        if a > 0 and b / a > jump:
            return math.sqrt(a * b)
    return math.inf


def show(b: int) -> str:
    c = chr(b)
    return repr(c)[1:-1] if c.isprintable() and b < 128 else f"\\x{b:02x}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture", help="a raw gradient message (snoop:DIR/link_0_to_1_gradients_first.bin)")
    ap.add_argument("--vocab", type=int, default=256, help="rows of the token embedding (gpt2-tiny: 256)")
    ap.add_argument("--dim", type=int, default=32, help="its columns, n_embd (gpt2-tiny: 32)")
    ap.add_argument("--jump", type=float, default=2.0, help="the ratio between neighbouring row norms that "
                    "separates the bytes in the batch from the rest")
    ap.add_argument("--data", help="the training shard (data/NAME_train.bin), to score against the real batch")
    ap.add_argument("--seq", type=int, default=32, help="--seq of the run")
    ap.add_argument("--batch", type=int, default=4, help="--batch of the run")
    ap.add_argument("--rank", type=int, default=0, help="the rank that sent the message")
    ap.add_argument("--seed", type=int, default=1337, help="--seed of the run")
    args = ap.parse_args()

    raw = read_bytes(args.capture, "capture")
    n = args.vocab * args.dim
    if len(raw) < 4 * n:
        bad_input(f"{args.capture}: {len(raw)} bytes, fewer than a {args.vocab} x {args.dim} float32 matrix")
    words = struct.unpack_from(f"<{len(raw) // 4}f", raw)
    share = sum(plausible(x) for x in words) / len(words)
    print(f"message: {len(raw)} bytes, {share:.1%} of its 4-byte words decode as plausible gradients "
          f"(random bytes: ~17%)")
    sealed = share < 0.9
    dists = row_distances(words[:n], args.vocab, args.dim)
    cut = gap_cut(dists, args.jump)
    recovered = {t for t, v in enumerate(dists) if v >= cut}
    rest = [v for v in dists if v < cut]
    if sealed:
        print("these bytes are not gradients (ciphertext): the same attack on them anyway, rows of noise:")
    else:
        zeros = sum(1 for x in words[:n] if x == 0.0)
        print(f"embedding gradient: {args.vocab} x {args.dim}, {zeros} zero values (dense: tied output layer)")
    print(f"distance of each row from the median row: {len(recovered)} rows beyond the first jump of "
          f"x{args.jump:g} (cut {cut:.3g}); the other {len(rest)} within {min(rest, default=0):.3g} .. "
          f"{max(rest, default=0):.3g}")
    print(f"recovered {len(recovered)} bytes: {''.join(show(b) for b in sorted(recovered))}" if recovered
          else "recovered 0 bytes: no row stands out from the others")
    if args.data:
        tokens = read_tokens(args.data)
        truth = batch_bytes(tokens, args.seq, args.batch, args.rank, args.seed)
        used = set(tokens)
        hit = len(recovered & truth)
        print(f"the real batch of rank {args.rank} at step 0: {len(truth)} distinct bytes: "
              f"{''.join(show(b) for b in sorted(truth))}")
        print(f"  (the training data uses {len(used)} distinct bytes: {len(used - truth)} of them are not in this "
              f"batch, {256 - len(used)} never occur)")
        precision = f"{hit / len(recovered):.0%}" if recovered else "n/a (nothing recovered)"
        print(f"recall {hit}/{len(truth)} = {hit / len(truth):.0%}, precision {precision} (bytes drawn at random: "
              f"precision {len(truth) / args.vocab:.0%})")
        # An attacker told how many bytes the batch holds takes that many of the most outlying rows.
        k = len(truth)
        top = set(sorted(range(len(dists)), key=lambda t: -dists[t])[:k])
        print(f"told it holds {k} bytes, the {k} most outlying rows hold {len(top & truth)} of them "
              f"(bytes drawn at random: {k * k / args.vocab:.1f})")
        if recovered - truth:
            print(f"  recovered but not in the batch: {''.join(show(b) for b in sorted(recovered - truth))}")
        if truth - recovered:
            print(f"  in the batch but missed: {''.join(show(b) for b in sorted(truth - recovered))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
