// The all-reduce's halves for sharded data parallelism with any algorithm (--shard with --allreduce-algo
// rd, rhd or hier; the ring's halves are its own: ring_allreduce.h).
//
// Note [Shard handover]: a sharded run's shard layout is the ring's, whatever algorithm sums a bucket:
// rank r owns ring chunk (r + 1) of every bucket (Note [Shard layout], engine/gradients/shard.h), so
// that `auto` may pick another algorithm for each bucket and each half and every stage, checkpoint
// and optimizer step sees one layout. An algorithm's reduce-scatter leaves its finished sums where its
// own steps leave them, its "natural" ownership:
//   rhd     rank q of the p2 taking part owns block bitrev(q) of p2 balanced blocks (the halving's last
//           window); the extra ranks of a non-power-of-two P (they fold) own nothing;
//   hier    rank (node n, local l) owns inter-node block (n + 1) of node chunk (l + 1): the inter-node
//           ring's owned block of the node ring's owned chunk;
//   rd      has no reduce-scatter of its own: its halves run rhd's hops (and say rhd_* in their
//           messages). rd and rhd add in one pairwise tree, partners at distance 1 first, each extra
//           rank's buffer folded in before anything else (recursive_allreduce.h), so rhd's halving is
//           an exact reduce-scatter for rd, with rd's bits, in as many steps as rd's and half its
//           bytes or less in each; "rd's all-reduce, then keep the shard" would cost the whole
//           all-reduce.
// The handover moves finished sums from natural owners to ring owners: one move per non-empty
// natural(q) ∩ ring(t), q != t, stored in place (no add: the sums are finished, so the handover changes
// no bit and every element keeps the sum order of DDP with the same algorithm). Where the two layouts
// agree (the ring; hier on one node; rhd at P = 2^k for the elements already in place) nothing
// travels. The moves go in as few rounds as the layouts allow: taken in the order of their elements,
// each move gets the first round in which its sender sends nothing yet and its receiver receives
// nothing yet, so every round is one hop with at most one send and one receive per rank, and a rank
// whose natural range meets one other ring chunk (rhd at P = 2^k: the moves are a permutation) sends
// and receives in one round. Every rank derives every rank's moves, so both ends of a move agree on its
// round, and a round's moves have both ends in it: no rank waits on a later round (no deadlock).
// The all-gather starts with the handback, the same moves and rounds the other way, then runs the
// algorithm's own all-gather steps (and rhd's unfold to the extra ranks). The rounds are hops of the
// one HopRunner, sealed on the pair streams and bound to step, bucket, phase (shard_handover /
// shard_handback), round (hop), the part's ring chunk (chunk) and sender (origin), as every other
// message is; two ranks exchange at most one part each way per bucket.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "comm/allreduce/hop_runner.h"
#include "comm/allreduce/ring_geometry.h"

namespace tt::comm {

// Which elements rank r holds finished before the handover / needs before its own all-gather steps.
using NaturalOwnership = std::function<ElemRange(int rank)>;

// Appends rank `rank`'s handover (to_ring: natural to ring layout) or handback (ring to natural) hops
// for a buffer of `count` floats over `size` ranks.
void handover_hops(int rank, int size, std::size_t count, const NaturalOwnership& natural, bool to_ring,
                   std::vector<Hop>& out);

}  // namespace tt::comm
