#include "comm/allreduce/recursive_allreduce.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "comm/allreduce/shard_handover.h"

namespace tt::comm {

namespace {

// Where a rank stands: p2 ranks take part under a virtual rank q; an extra rank (q = -1) folds into
// `partner` and waits.
struct Role {
  int p2 = 1;
  int rem = 0;
  int q = -1;
  int partner = -1;  // extra rank: whom it folds into; folding partner: whose buffer it takes; else -1
};

Role role_of(int rank, int size) {
  Role r;
  while (r.p2 * 2 <= size) r.p2 *= 2;
  r.rem = size - r.p2;
  if (rank < 2 * r.rem) {
    const bool extra = rank % 2 == 0;
    r.q = extra ? -1 : rank / 2;
    r.partner = extra ? rank + 1 : rank - 1;
  } else {
    r.q = rank - r.rem;
  }
  return r;
}

int real_rank(const Role& r, int q) {
  return q < r.rem ? 2 * q + 1 : q + r.rem;
}

int log2_of(int p2) {
  int k = 0;
  while ((1 << k) < p2) ++k;
  return k;
}

struct Phases {
  MessagePhase fold, unfold;
};

Phases phases_of(RecursiveKind kind) {
  return kind == RecursiveKind::Doubling ? Phases{MessagePhase::RdFold, MessagePhase::RdUnfold}
                                         : Phases{MessagePhase::RhdFold, MessagePhase::RhdUnfold};
}

// Blocks [b0, b1) of `count` elements cut into p2 balanced blocks, as one range.
ElemRange blocks(std::size_t count, int p2, int b0, int b1) {
  const auto parts = static_cast<std::size_t>(p2);
  const ElemRange first = balanced_block(count, parts, static_cast<std::size_t>(b0));
  const ElemRange last = balanced_block(count, parts, static_cast<std::size_t>(b1 - 1));
  return {first.offset, last.offset + last.count - first.offset};
}

HopSide side(int peer, const ElemRange& range, int block, int origin) {
  return {peer, range, static_cast<std::uint32_t>(block), origin};
}

// Recursive doubling's exchanges: whole buffers, partner q ^ 2^i.
void doubling_steps(const Role& r, int rank, std::size_t count, std::vector<Hop>& out) {
  const ElemRange all{0, count};
  for (int i = 0; (1 << i) < r.p2; ++i) {
    const int peer = real_rank(r, r.q ^ (1 << i));
    Hop h;
    h.phase = MessagePhase::RdExchange;
    h.index = static_cast<std::uint32_t>(i);
    h.send = side(peer, all, 0, rank);
    h.recv = side(peer, all, 0, peer);
    h.reduce = true;
    h.fuse = true;  // the next exchange (or the unfold) sends the whole buffer just added
    out.push_back(h);
  }
}

// The block rank q keeps after the halving: at step i it keeps the lower half of its window when bit
// i of q is 0, so q ends owning block bitrev(q).
int halving_block(const Role& r) {
  int lo = 0;
  for (int i = 0; (1 << i) < r.p2; ++i) {
    if ((r.q & (1 << i)) != 0) lo += r.p2 >> (i + 1);
  }
  return lo;
}

// Rabenseifner's reduce-scatter by recursive halving. It pairs by rising distance, as recursive
// doubling does, so both add in the same tree.
void halving_steps(const Role& r, int rank, std::size_t count, std::vector<Hop>& out) {
  int lo = 0;  // our block window is [lo, lo + width)
  for (int i = 0; (1 << i) < r.p2; ++i) {
    const int d = 1 << i;
    const int half = r.p2 >> (i + 1);
    const int peer = real_rank(r, r.q ^ d);
    const bool low = (r.q & d) == 0;  // we keep the lower half
    const int keep = low ? lo : lo + half;
    const int give = low ? lo + half : lo;
    Hop h;
    h.phase = MessagePhase::RhdScatterReduce;
    h.index = static_cast<std::uint32_t>(i);
    h.send = side(peer, blocks(count, r.p2, give, give + half), give, rank);
    h.recv = side(peer, blocks(count, r.p2, keep, keep + half), keep, peer);
    h.reduce = true;
    h.fuse = true;  // the last one: the first all-gather step sends the block it finishes
    out.push_back(h);
    lo = keep;
  }
}

// Rabenseifner's all-gather by recursive doubling: from block halving_block(q), the halving's steps
// retraced backwards.
void doubling_gather_steps(const Role& r, int rank, std::size_t count, std::vector<Hop>& out) {
  int lo = halving_block(r);
  for (int i = 0; (1 << i) < r.p2; ++i) {
    const int d = r.p2 >> (i + 1);
    const int width = 1 << i;
    const int peer = real_rank(r, r.q ^ d);
    const int theirs = (r.q & d) == 0 ? lo + width : lo - width;
    Hop h;
    h.phase = MessagePhase::RhdAllGather;
    h.index = static_cast<std::uint32_t>(i);
    h.send = side(peer, blocks(count, r.p2, lo, lo + width), lo, rank);
    h.recv = side(peer, blocks(count, r.p2, theirs, theirs + width), theirs, peer);
    out.push_back(h);
    lo = std::min(lo, theirs);
  }
}

// The p2 ranks' steps of one collective (the extra ranks take no part in them).
void core_steps(RecursiveKind kind, Collective what, const Role& r, int rank, std::size_t count,
                std::vector<Hop>& out) {
  if (kind == RecursiveKind::Doubling) {
    doubling_steps(r, rank, count, out);
    return;
  }
  if (what != Collective::AllGather) halving_steps(r, rank, count, out);
  if (what != Collective::ReduceScatter) doubling_gather_steps(r, rank, count, out);
}

}  // namespace

int recursive_steps(RecursiveKind kind, int size) {
  if (size <= 1) return 0;
  const Role r = role_of(0, size);
  const int k = log2_of(r.p2);
  return (kind == RecursiveKind::Doubling ? k : 2 * k) + (r.rem > 0 ? 2 : 0);
}

ElemRange halving_owned(int rank, int size, std::size_t count) {
  const Role r = role_of(rank, size);
  if (r.q < 0) return {};
  const int b = halving_block(r);
  return blocks(count, r.p2, b, b + 1);
}

std::vector<Hop> recursive_hops(RecursiveKind kind, int rank, int size, std::size_t count, Collective what) {
  std::vector<Hop> out;
  if (size <= 1) return out;
  if (what != Collective::Allreduce) kind = RecursiveKind::HalvingDoubling;  // Note [Shard handover]
  const Role r = role_of(rank, size);
  const Phases ph = phases_of(kind);
  const ElemRange all{0, count};
  const bool scatter = what != Collective::AllGather;
  const bool gather = what != Collective::ReduceScatter;
  const auto natural = [size, count](int q) { return halving_owned(q, size, count); };
  if (!scatter) handover_hops(rank, size, count, natural, false, out);
  if (r.partner >= 0 && scatter) {
    // An extra rank hands its buffer over; its partner adds it in.
    Hop fold;
    fold.phase = ph.fold;
    if (r.q < 0) {
      fold.send = side(r.partner, all, 0, rank);
    } else {
      fold.recv = side(r.partner, all, 0, r.partner);
      fold.reduce = true;
      fold.fuse = true;  // rd's first exchange sends the whole buffer just added (rhd's a half: no fusion)
    }
    out.push_back(fold);
  }
  if (r.q >= 0) core_steps(kind, what, r, rank, count, out);
  if (r.partner >= 0 && gather) {
    // The result back to the extra rank.
    Hop unfold;
    unfold.phase = ph.unfold;
    if (r.q < 0) {
      unfold.recv = side(r.partner, all, 0, r.partner);
    } else {
      unfold.send = side(r.partner, all, 0, rank);
    }
    out.push_back(unfold);
  }
  if (!gather) handover_hops(rank, size, count, natural, true, out);
  return out;
}

RecursiveAllreduce::RecursiveAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory,
                                       RingOptions options, Profiler* profiler)
    : t_(transport), opt_(std::move(options)), hops_(transport, channel, memory, profiler) {
  const std::string where = memory.space() == MemorySpace::Host ? "" : "device ";
  constexpr const char* kKinds[] = {"recursive doubling ", "recursive halving-doubling "};  // RecursiveKind
  constexpr const char* kWhat[] = {"all-reduce", "reduce-scatter", "all-gather"};           // Collective
  for (std::size_t i = 0; i < names_.size(); ++i) names_[i] = where + kKinds[i / 3] + kWhat[i % 3];
  check_channel_memory(where + "recursive all-reduce", channel, memory);
}

void RecursiveAllreduce::allreduce_sum(RecursiveKind kind, float* data, std::size_t count,
                                       const MessageContext& id) {
  allreduce_sum(kind, data, count, id, opt_.segment_bytes);
}

void RecursiveAllreduce::allreduce_sum(RecursiveKind kind, float* data, std::size_t count,
                                       const MessageContext& id, std::size_t segment_bytes) {
  run(kind, Collective::Allreduce, data, count, id, segment_bytes);
}

void RecursiveAllreduce::run(RecursiveKind kind, Collective what, float* data, std::size_t count,
                             const MessageContext& id, std::size_t segment_bytes) {
  if (t_.size() == 1 || count == 0) return;
  if (what != Collective::Allreduce) kind = RecursiveKind::HalvingDoubling;  // Note [Shard handover]
  const std::string& name = names_[static_cast<std::size_t>(kind) * 3 + static_cast<std::size_t>(what)];
  if (data == nullptr) throw RunError(name + ": null buffer");
  const int rank = t_.rank();
  const int size = t_.size();
  hops_.run_plan({.kind = static_cast<int>(kind), .what = what, .count = count},
                 [=] { return recursive_hops(kind, rank, size, count, what); }, data, id,
                 {.name = &name, .segment_bytes = segment_bytes, .timeout = opt_.timeout, .tag = opt_.tag});
}

}  // namespace tt::comm
