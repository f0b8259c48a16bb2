// What each rank of a sharded run owns (--shard optimizer|gradients: ZeRO-1 and ZeRO-2).
//
// Note [Shard layout]: a ring all-reduce IS a reduce-scatter followed by an all-gather
// (comm/allreduce/ring_allreduce.h); after the scatter-reduce of a bucket, rank r holds the finished
// sum of the bucket's ring chunk r + 1 (RingGeometry::owned). That chunk, in every bucket, is rank r's
// shard: the reduce-scatter leaves it the averaged gradients there (and nowhere else), the optimizer
// updates those parameters only, with AdamW state for them only, and the ring's all-gather of each
// bucket of the parameters sends them to every rank. The layout is a function of the buckets (the
// parameter table and --bucket-mb), the world size and the rank: all agreed inputs (the configuration
// names --shard and --bucket-mb; engine/run/input_agreement.h), so every rank cuts the same shards. It is
// the layout of every algorithm's halves, not only the ring's: rd, rhd and hier move their finished sums
// to it (Note [Shard handover], comm/allreduce/shard_handover.h), so it depends on no bucket's choice of
// algorithm. Every element is summed by the same hops as DDP's all-reduce with the same algorithm and
// updated by the same per-element optimizer step, so a sharded run's parameters are DDP's bit for bit
// (the gradient norm is the one sum that spans shards: Note [Gradient norm order], ddp_reducer.h).
//
// Checkpoints of a sharded run (--ckpt-layout, engine/checkpoint/checkpoint_manifest.h): sharded, each
// rank saves its packed shard and the manifest records every rank's ranges from shard_ranges; whole, the
// ranks all-gather the optimizer state (as PyTorch FSDP's full state dict does) and rank 0 writes it as
// DDP's. On resume each rank keeps its shard, read from its own file when the ranges agree, else cut
// from the whole state. So a checkpoint resumes at any world size and stage, and `ckpt export` writes
// the whole model as ever. On a GPU the optimizer state is device memory: the packing goes through host
// copies (expand_shard_on, pack_shard_on), as the files' bytes do.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "comm/allreduce/ring_geometry.h"
#include "core/backend.h"
#include "engine/gradients/ddp_reducer.h"
#include "engine/optimizer.h"

namespace tt {

// Rank `rank`'s shard of the flat parameter buffer: its ring chunk of every bucket, in launch order.
inline std::vector<ParamRange> shard_ranges(const std::vector<Bucket>& buckets, int rank, int world) {
  std::vector<ParamRange> out;
  for (const Bucket& b : buckets) {
    const comm::ElemRange own = comm::RingGeometry::owned_chunk(rank, world, b.size());
    if (own.count > 0) out.push_back(ParamRange{.offset = b.begin + own.offset, .count = own.count});
  }
  return out;
}

// Between a shard's packed optimizer state ([slot (S floats)] x slots, S the shard's floats) and the
// whole model's ([slot (n floats)] x slots, zeros outside the shard when expanded).
inline std::size_t shard_floats(const std::vector<ParamRange>& shard) {
  std::size_t s_floats = 0;
  for (const ParamRange& r : shard) s_floats += r.count;
  return s_floats;
}

// Note [Sharded fold]: in a folded ring (--model-ranks P run by K ranks, Note [Folded ring] in
// comm/allreduce/ring_geometry.h) rank r plays modelled rank r, and stands for every modelled rank
// r + jK, whose ring positions, messages and links repeat its own. A sharded rank's optimizer does not:
// it launches one update per parameter piece its shard cuts (optimizer_pieces), and the shards that
// hold a bucket's chunk 0 (modelled rank P - 1's) cut the most. So a fold's rank r updates, in cost,
// the shard of its class's slowest member: the most pieces, then the most floats (an emulated run
// computes no values; only the time counts). A ring all-gather after the optimizer finishes on the last
// rank at max over ranks j (j's optimizer end + the P - 1 hops from j), the same whether each rank pays
// its own update or its class's slowest, so the step time and the optimizer's slowest rank are the
// whole ring's. How ranks split their time between phases is the fold's: a rank that would wait for the
// slowest pays the slow update itself (the optimizer's mean up, the waits' down). tests/cli/
// folded_ring.sh compares folds with whole rings for every stage; docs/reproducing.md, "Folded ring".
// The shard rank `rank` of `run` updates in a ring of `modelled` ranks: its own unfolded, the slowest of
// its class in a fold (above).
inline std::vector<ParamRange> updated_shard(const std::vector<Bucket>& buckets,
                                             const std::vector<ParamInfo>& params, int rank, int run,
                                             int modelled) {
  std::vector<ParamRange> slowest;
  std::pair<std::size_t, std::size_t> most{0, 0};  // (pieces, floats)
  for (int m = rank; m < modelled; m += run) {
    std::vector<ParamRange> ranges = shard_ranges(buckets, m, modelled);
    const std::pair<std::size_t, std::size_t> cost{optimizer_pieces(params, ranges), shard_floats(ranges)};
    if (m == rank || cost > most) {
      most = cost;
      slowest = std::move(ranges);
    }
  }
  return slowest;
}

inline void expand_shard(const std::vector<ParamRange>& shard, std::size_t n, std::size_t slots,
                         const float* packed, float* full) {
  const std::size_t s_floats = shard_floats(shard);
  std::fill(full, full + slots * n, 0.0f);
  for (std::size_t s = 0; s < slots; ++s) {
    std::size_t at = s * s_floats;
    for (const ParamRange& r : shard) {
      std::copy(packed + at, packed + at + r.count, full + s * n + r.offset);
      at += r.count;
    }
  }
}

inline void pack_shard(const std::vector<ParamRange>& shard, std::size_t n, std::size_t slots,
                       const float* full, float* packed) {
  for (std::size_t s = 0; s < slots; ++s) {
    for (const ParamRange& r : shard) {
      const float* from = full + s * n + r.offset;
      packed = std::copy(from, from + r.count, packed);
    }
  }
}

// `on_host(from, to)` on host copies of `from_n` floats at `from` and `to_n` at `to`, the latter then
// copied back: for state in memory the host cannot address (a GPU's optimizer state; at a checkpoint,
// not a step).
template <typename Fn>
void on_host_copies(Backend& backend, const float* from, std::size_t from_n, float* to, std::size_t to_n,
                    Fn on_host) {
  std::vector<float> host_from(from_n), host_to(to_n);
  backend.copy_to_host(host_from.data(), from, from_n * sizeof(float));
  on_host(host_from.data(), host_to.data());
  backend.copy_to_device(to, host_to.data(), to_n * sizeof(float));
}

// expand_shard and pack_shard through host copies of both sides.
inline void expand_shard_staged(Backend& backend, const std::vector<ParamRange>& shard, std::size_t n,
                                std::size_t slots, const float* packed, float* full) {
  on_host_copies(backend, packed, slots * shard_floats(shard), full, slots * n,
                 [&](const float* p, float* f) { expand_shard(shard, n, slots, p, f); });
}

inline void pack_shard_staged(Backend& backend, const std::vector<ParamRange>& shard, std::size_t n,
                              std::size_t slots, const float* full, float* packed) {
  on_host_copies(backend, full, slots * n, packed, slots * shard_floats(shard),
                 [&](const float* f, float* p) { pack_shard(shard, n, slots, f, p); });
}

// On state in `backend`'s memory: in place on a CPU's, staged through the host elsewhere.
inline void expand_shard_on(Backend& backend, const std::vector<ParamRange>& shard, std::size_t n,
                            std::size_t slots, const float* packed, float* full) {
  if (backend.kind() == DeviceKind::Cpu) return expand_shard(shard, n, slots, packed, full);
  expand_shard_staged(backend, shard, n, slots, packed, full);
}

inline void pack_shard_on(Backend& backend, const std::vector<ParamRange>& shard, std::size_t n,
                          std::size_t slots, const float* full, float* packed) {
  if (backend.kind() == DeviceKind::Cpu) return pack_shard(shard, n, slots, full, packed);
  pack_shard_staged(backend, shard, n, slots, full, packed);
}

}  // namespace tt
