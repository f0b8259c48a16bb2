"""Assignment 7, the reference solution (keep it away from students until they have handed in).

Pad every message of a kind up to the size the largest model of the set sends for it: the
broadcast is the whole model (4 bytes per float32 parameter), a gradient message one ring chunk
(ceil(parameters / world) floats: the first chunks of a ring take the remainder). Every model of the
set then sends the same sizes, and no stateless policy that hides them sends less: the grader's
optimum is exactly this.
"""

import math

ANONYMITY_SET = {"gpt2-tiny": 34688, "bert-tiny": 36161}
FLOAT_BYTES = 4


def padded_size(kind: str, payload_bytes: int, world: int) -> int:
    largest = max(ANONYMITY_SET.values())
    target = {"broadcast": FLOAT_BYTES * largest,
              "gradients": FLOAT_BYTES * math.ceil(largest / world)}.get(kind, payload_bytes)
    return max(payload_bytes, target)
