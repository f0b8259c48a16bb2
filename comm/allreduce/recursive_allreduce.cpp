#include "comm/allreduce/recursive_allreduce.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

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

// Rabenseifner: reduce-scatter by recursive halving, then all-gather by recursive doubling. The
// reduce-scatter pairs by rising distance, as recursive doubling does, so both add in the same tree.
void halving_doubling_steps(const Role& r, int rank, std::size_t count, std::vector<Hop>& out) {
  const int k = log2_of(r.p2);
  int lo = 0;  // our block window is [lo, lo + width)
  for (int i = 0; i < k; ++i) {
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
  // Rank q now owns block lo (q's bits reversed); the all-gather retraces the steps backwards.
  for (int i = 0; i < k; ++i) {
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

}  // namespace

int recursive_steps(RecursiveKind kind, int size) {
  if (size <= 1) return 0;
  const Role r = role_of(0, size);
  const int k = log2_of(r.p2);
  return (kind == RecursiveKind::Doubling ? k : 2 * k) + (r.rem > 0 ? 2 : 0);
}

std::vector<Hop> recursive_hops(RecursiveKind kind, int rank, int size, std::size_t count) {
  std::vector<Hop> out;
  if (size <= 1) return out;
  const Role r = role_of(rank, size);
  const Phases ph = phases_of(kind);
  const ElemRange all{0, count};
  Hop fold;
  fold.phase = ph.fold;
  Hop unfold;
  unfold.phase = ph.unfold;
  if (r.q < 0) {
    // Extra rank: hand our buffer over, take the result back.
    fold.send = side(r.partner, all, 0, rank);
    unfold.recv = side(r.partner, all, 0, r.partner);
    out = {fold, unfold};
    return out;
  }
  if (r.partner >= 0) {
    fold.recv = side(r.partner, all, 0, r.partner);
    fold.reduce = true;
    fold.fuse =
        true;  // rd's first exchange sends the whole buffer just added (rhd's sends a half: no fusion)
    out.push_back(fold);
  }
  if (kind == RecursiveKind::Doubling) {
    doubling_steps(r, rank, count, out);
  } else {
    halving_doubling_steps(r, rank, count, out);
  }
  if (r.partner >= 0) {
    unfold.send = side(r.partner, all, 0, rank);
    out.push_back(unfold);
  }
  return out;
}

RecursiveAllreduce::RecursiveAllreduce(Transport& transport, Channel& channel, ReduceMemory& memory,
                                       RingOptions options, Profiler* profiler)
    : t_(transport),
      channel_(channel),
      memory_(memory),
      opt_(std::move(options)),
      prof_(profiler),
      hops_(transport, channel, memory, profiler) {
  const std::string where = memory.space() == MemorySpace::Host ? "" : "device ";
  names_[0] = where + "recursive doubling all-reduce";
  names_[1] = where + "recursive halving-doubling all-reduce";
  check_channel_memory(where + "recursive all-reduce", channel, memory);
}

void RecursiveAllreduce::allreduce_sum(RecursiveKind kind, float* data, std::size_t count,
                                       const MessageContext& id) {
  allreduce_sum(kind, data, count, id, opt_.segment_bytes);
}

void RecursiveAllreduce::allreduce_sum(RecursiveKind kind, float* data, std::size_t count,
                                       const MessageContext& id, std::size_t segment_bytes) {
  if (t_.size() == 1 || count == 0) return;
  const std::string& name = names_[kind == RecursiveKind::Doubling ? 0 : 1];
  if (data == nullptr) throw RunError(name + ": null buffer");
  const auto begin = prof_ != nullptr ? prof_->now() : Profiler::Clock::now();
  if (plan_.empty() || plan_kind_ != kind || plan_count_ != count) {
    plan_ = recursive_hops(kind, t_.rank(), t_.size(), count);
    plan_kind_ = kind;
    plan_count_ = count;
    widest_ = 0;
    for (const Hop& h : plan_) widest_ = std::max({widest_, h.send.range.count, h.recv.range.count});
  }
  hops_.begin(name, SegmentLayout(segment_bytes, widest_, channel_.overhead()), widest_, id, opt_.timeout,
              opt_.tag);
  memory_.wait_queued();  // the first sends read `data`: whatever produced it must be done
  hops_.run_all(data, plan_);
  if (prof_ != nullptr && prof_->tracing()) prof_->record("allreduce", Lane::Comm, begin, prof_->now());
}

}  // namespace tt::comm
