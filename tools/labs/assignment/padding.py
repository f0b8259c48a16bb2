"""Assignment 7 (docs/labs/07-assignment.md): a padding policy against traffic analysis of message sizes.

With the TEE on, every message between ranks is AES-GCM ciphertext, but its length is the length of
what was sealed plus 28 bytes. The adversary on the links (`--adversary snoop`) reads the sizes, and
from them which model the ranks train. Your defence: before a message is sealed, its payload is
padded with zeros up to `padded_size(...)` bytes; the receiver knows the real length (every rank
computes the same ring geometry from the same model), so it strips the padding after opening, and
the padding bytes are sealed and authenticated like the rest.

Grade it with:  python3 "$TEETRAIN_REPO/tools/labs/grade_padding.py" padding.py
"""

# PATCH POINT 1: the set of models your padding must make indistinguishable, by parameter count
# (`teetrain models` prints them). The grader trains each of them, sealed, on 2 ranks.
ANONYMITY_SET = {"gpt2-tiny": 34688, "bert-tiny": 36161}


def padded_size(kind: str, payload_bytes: int, world: int) -> int:
    """The number of bytes to seal for a message of `payload_bytes` bytes.

    kind:  "broadcast" (the initial parameters, once, from rank 0) or "gradients" (one ring hop of
           one bucket's chunk); world: the number of ranks. Must return an int >= payload_bytes.
    """
    # PATCH POINT 2: the starter pads nothing, so the adversary tells the models apart.
    return payload_bytes
