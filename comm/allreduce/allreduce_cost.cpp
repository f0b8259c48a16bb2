#include "comm/allreduce/allreduce_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "comm/allreduce/hier_allreduce.h"
#include "comm/allreduce/recursive_allreduce.h"
#include "comm/allreduce/ring_geometry.h"

namespace tt::comm {

namespace {

// One rank's hops for `algo`'s collective `what` (the ring's labels do not matter here: only ranges and
// peers).
// forward: the ring's all-gather forwards the owner's seal (Hop::reseal false after its first hop).
std::vector<Hop> hops_of(ReduceAlgo algo, Collective what, int rank, int ranks, std::size_t count,
                         int node_ranks, bool forward = false) {
  // forward: hier's all-gathers as forward wire runs them, the forwarded hops marked (Note [Sub-group
  // streams], comm/channel.h).
  if (algo == ReduceAlgo::Hier) return hier_hops(rank, ranks, node_ranks, count, what, forward);
  if (algo != ReduceAlgo::Ring) {
    return recursive_hops(algo == ReduceAlgo::Rd ? RecursiveKind::Doubling : RecursiveKind::HalvingDoubling,
                          rank, ranks, count, what);
  }
  const RingGeometry geo(rank, ranks, count, 0, forward, 0);
  std::vector<Hop> out;
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(ranks) && what != Collective::AllGather; ++s)
    out.push_back(geo.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(ranks) && what != Collective::ReduceScatter;
       ++s)
    out.push_back(geo.all_gather_hop(s));
  return out;
}

// What a bucket runs: the all-reduce, or (split) its reduce-scatter and then its all-gather.
std::vector<Hop> hops_of(ReduceAlgo algo, int rank, int ranks, std::size_t count, int node_ranks, bool split,
                         bool forward = false) {
  if (!split) return hops_of(algo, Collective::Allreduce, rank, ranks, count, node_ranks, forward);
  std::vector<Hop> out = hops_of(algo, Collective::ReduceScatter, rank, ranks, count, node_ranks, forward);
  const std::vector<Hop> gather =
      hops_of(algo, Collective::AllGather, rank, ranks, count, node_ranks, forward);
  out.insert(out.end(), gather.begin(), gather.end());
  return out;
}

}  // namespace

std::vector<int> send_peers(ReduceAlgo algo, int rank, int ranks, int node_ranks, bool split) {
  // Chunks of every size the algorithms cut are non-empty at this count: every hop sends.
  const std::size_t count = static_cast<std::size_t>(ranks) * 1024;
  std::vector<int> out;
  for (const Hop& h : hops_of(algo, rank, ranks, count, node_ranks, split))
    if (h.send.active() && std::find(out.begin(), out.end(), h.send.peer) == out.end())
      out.push_back(h.send.peer);
  return out;
}

namespace {

// Note [Steps at the slowest link] (allreduce_cost.h): step i crosses when any rank's hop i has a peer
// on another node. Empty without nodes.
std::vector<bool> crossing_steps(ReduceAlgo algo, int ranks, std::size_t count, int node_ranks, bool split) {
  std::vector<bool> out;
  if (node_ranks <= 0 || node_ranks >= ranks) return out;
  const auto other_node = [node_ranks](int rank, const HopSide& s) {
    return s.active() && s.peer / node_ranks != rank / node_ranks;
  };
  for (int r = 0; r < ranks; ++r) {
    const std::vector<Hop> hops = hops_of(algo, r, ranks, count, node_ranks, split);
    if (out.size() < hops.size()) out.resize(hops.size(), false);
    for (std::size_t i = 0; i < hops.size(); ++i)
      if (other_node(r, hops[i].send) || other_node(r, hops[i].recv)) out[i] = true;
  }
  return out;
}

// Segments of `range` longer than `eager_bytes` on the wire (0: no limit). All but the last are full.
std::size_t rendezvous_segments(const SegmentLayout& layout, const ElemRange& range, std::size_t eager_bytes,
                                std::size_t overhead) {
  const std::size_t n = layout.segments(range);
  if (eager_bytes == 0 || n == 0) return 0;
  const auto wire = [&](std::size_t elems) { return elems * sizeof(float) + overhead; };
  const std::size_t last = range.count - (n - 1) * layout.segment_elems();
  return (n - 1) * (wire(layout.segment_elems()) > eager_bytes ? 1 : 0) + (wire(last) > eager_bytes ? 1 : 0);
}

// A hop's sends and receives overlap: it takes as long as its longer direction. crossing[i]: step i
// crosses between nodes (Note [Steps at the slowest link], allreduce_cost.h).
AllreduceWork work_of(const std::vector<Hop>& hops, std::size_t segment_bytes, std::size_t eager_bytes,
                      std::size_t overhead, const std::vector<bool>& crossing) {
  std::size_t widest = 0;
  for (const Hop& h : hops) widest = std::max({widest, h.send.range.count, h.recv.range.count});
  const SegmentLayout layout(segment_bytes, widest, 0);
  AllreduceWork w;
  for (std::size_t i = 0; i < hops.size(); ++i) {
    const Hop& h = hops[i];
    const ElemRange out = h.send.active() ? h.send.range : ElemRange{};
    const ElemRange in = h.recv.active() ? h.recv.range : ElemRange{};
    const auto messages = static_cast<double>(std::max(layout.segments(out), layout.segments(in)));
    const auto bytes = static_cast<double>(std::max(out.count, in.count) * sizeof(float));
    const bool forwarded = h.forwarded && !h.reseal;
    const auto sent = static_cast<double>(layout.segments(out));
    const auto sent_bytes = static_cast<double>(out.count * sizeof(float));
    if (i < crossing.size() && crossing[i]) {
      w.inter_messages += messages;
      w.inter_wire_bytes += bytes;
      w.inter_forwarded_messages += forwarded ? sent : 0;
      w.inter_forwarded_bytes += forwarded ? sent_bytes : 0;
    }
    w.forwarded_messages += forwarded ? sent : 0;
    w.forwarded_bytes += forwarded ? sent_bytes : 0;
    w.messages += messages;
    const std::size_t out_rendezvous = rendezvous_segments(layout, out, eager_bytes, overhead);
    const std::size_t in_rendezvous = rendezvous_segments(layout, in, eager_bytes, overhead);
    w.rendezvous += static_cast<double>(std::max(out_rendezvous, in_rendezvous));
    // Note [Rendezvous turns]: an exchange of rendezvous messages with one peer, after the first hop.
    if (i > 0 && out_rendezvous > 0 && in_rendezvous > 0 && h.send.peer == h.recv.peer)
      w.turn_bytes += static_cast<double>(std::min(out.count, in.count) * sizeof(float));
    w.wire_bytes += bytes;
    if (h.reduce) w.reduce_bytes += static_cast<double>(in.count * sizeof(float));
  }
  return w;
}

// Note [Each end of a step]: one rank's hop as the run charges it. Its sends are sealed (seal_us) before
// they go out; its receive, from `from`, takes link_us on the link once the sender's seal is done and the
// link is free, then open_us to open and add it in.
struct PricedHop {
  int from = kNoPeer;
  double seal_us = 0;
  double link_us = 0;
  double open_us = 0;
};

Route route_of(const Hop& h, int sender, int receiver, int node_ranks) {
  // The flat ring's forwarded block is a world group message; a hier sub-group's travels inside or
  // between nodes as its peers are (Note [Sub-group streams], comm/channel.h).
  if (h.forwarded && h.group.world()) return Route::Group;
  return node_ranks > 0 && sender / node_ranks != receiver / node_ranks ? Route::Between : Route::Inside;
}

std::vector<PricedHop> priced_hops(const CostModel& m, const std::vector<Hop>& hops, int rank,
                                   std::size_t segment_bytes, std::size_t overhead) {
  const StepCosts& c = *m.steps;
  std::size_t widest = 0;
  for (const Hop& h : hops) widest = std::max({widest, h.send.range.count, h.recv.range.count});
  const SegmentLayout layout(segment_bytes, widest, 0);
  const auto size = [&layout](const HopSide& side) {
    return std::pair{static_cast<double>(layout.segments(side.range)),
                     static_cast<double>(side.range.count * sizeof(float))};
  };
  std::vector<PricedHop> out;
  for (const Hop& h : hops) {
    PricedHop p;
    if (h.send.active() && h.reseal) {
      const auto [messages, bytes] = size(h.send);
      p.seal_us = c.ends[static_cast<std::size_t>(route_of(h, rank, h.send.peer, m.node_ranks))].seal.of(
          messages, bytes);
    }
    if (h.recv.active()) {
      const auto [messages, bytes] = size(h.recv);
      const bool apart = m.node_ranks > 0 && h.recv.peer / m.node_ranks != rank / m.node_ranks;
      p.from = h.recv.peer;
      p.link_us = c.link[apart ? 1 : 0].of(messages, bytes) +
                  m.rendezvous_us *
                      static_cast<double>(rendezvous_segments(layout, h.recv.range, m.eager_bytes, overhead));
      p.open_us = c.ends[static_cast<std::size_t>(route_of(h, h.recv.peer, rank, m.node_ranks))].open.of(
                      messages, bytes) +
                  (h.reduce ? bytes * m.reduce_ns_per_byte * 1e-3 : 0.0);
    }
    out.push_back(p);
  }
  return out;
}

// Note [Each end of a step]: every rank through its hops, in step with its peers' messages; the time
// the last rank finishes.
double stepped_us(const CostModel& m, ReduceAlgo algo, int ranks, std::size_t count,
                  std::size_t segment_bytes, std::size_t overhead, bool split) {
  std::vector<std::vector<PricedHop>> hops;  // [rank][hop]
  std::size_t steps = 0;
  for (int r = 0; r < ranks; ++r) {
    hops.push_back(
        priced_hops(m, hops_of(algo, r, ranks, count, m.node_ranks, split, m.steps->forward_all_gather), r,
                    segment_bytes, overhead));
    steps = std::max(steps, hops.back().size());
  }
  std::vector<double> t(static_cast<std::size_t>(ranks), 0.0), sent(t.size());
  std::map<std::pair<int, int>, double> link_free;  // (sender, receiver): when its link is idle
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t r = 0; r < t.size(); ++r) sent[r] = t[r] + (s < hops[r].size() ? hops[r][s].seal_us : 0);
    for (std::size_t r = 0; r < t.size(); ++r) {
      t[r] = sent[r];
      if (s >= hops[r].size() || hops[r][s].from == kNoPeer) continue;
      const PricedHop& h = hops[r][s];
      double& free = link_free[{h.from, static_cast<int>(r)}];
      free = std::max(sent[static_cast<std::size_t>(h.from)], free) + h.link_us;
      t[r] = std::max(t[r], free) + h.open_us;
    }
  }
  return *std::max_element(t.begin(), t.end());
}

constexpr int kTerms = 4;  // message, rendezvous, wire, reduce
using Terms = std::array<double, kTerms>;

// turns: Note [Rendezvous turns], the turn bytes cross the wire again (CostModel::predict_us).
Terms terms_of(const AllreduceWork& w, bool turns) {
  return {w.messages, w.rendezvous, (w.wire_bytes + (turns ? w.turn_bytes : 0.0)) * 1e-3,
          w.reduce_bytes * 1e-3};
}

// Solves the normal equations of the columns in `use` (others fixed at 0); false when singular.
bool solve_subset(const std::vector<Terms>& rows, const std::array<bool, kTerms>& use, Terms& x) {
  std::array<std::array<double, kTerms + 1>, kTerms> a{};  // augmented (A^T A | A^T 1)
  for (const auto& r : rows) {
    for (int i = 0; i < kTerms; ++i) {
      for (int j = 0; j < kTerms; ++j) a[i][j] += r[i] * r[j];
      a[i][kTerms] += r[i];
    }
  }
  for (int i = 0; i < kTerms; ++i) {
    if (use[i]) continue;
    a[i] = {};
    a[i][i] = 1;
    for (int j = 0; j < kTerms; ++j) {
      if (j != i) a[j][i] = 0;
    }
  }
  for (int c = 0; c < kTerms; ++c) {  // Gauss-Jordan with partial pivoting
    int piv = c;
    for (int r = c + 1; r < kTerms; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    if (std::fabs(a[piv][c]) < 1e-12) return false;
    std::swap(a[c], a[piv]);
    for (int r = 0; r < kTerms; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j <= kTerms; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < kTerms; ++i) x[i] = use[i] ? a[i][kTerms] / a[i][i] : 0.0;
  return true;
}

double dot(const Terms& r, const Terms& x) {
  double s = 0;
  for (int i = 0; i < kTerms; ++i) s += r[i] * x[i];
  return s;
}

}  // namespace

AllreduceWork allreduce_work(ReduceAlgo algo, int ranks, std::size_t count, std::size_t segment_bytes,
                             std::size_t eager_bytes, std::size_t overhead, int node_ranks, bool split) {
  AllreduceWork busiest;
  if (ranks < 2 || count == 0) return busiest;
  const std::vector<bool> crossing = crossing_steps(algo, ranks, count, node_ranks, split);
  for (int r = 0; r < ranks; ++r) {
    // hier's forwarded hops marked: the forward_* terms price them (0 where the run re-seals).
    const AllreduceWork w =
        work_of(hops_of(algo, r, ranks, count, node_ranks, split, algo == ReduceAlgo::Hier), segment_bytes,
                eager_bytes, overhead, crossing);
    if (w.messages > busiest.messages ||
        (w.messages == busiest.messages && w.wire_bytes > busiest.wire_bytes))
      busiest = w;
  }
  return busiest;
}

double CostModel::predict_us(const AllreduceWork& w) const {
  const double forward_saved_us =
      w.forwarded_messages * forward_message_us + w.inter_forwarded_messages * inter_forward_message_us +
      (w.forwarded_bytes * forward_ns_per_byte + w.inter_forwarded_bytes * inter_forward_ns_per_byte) * 1e-3;
  const double turn_bytes = rendezvous_turns ? w.turn_bytes : 0.0;  // Note [Rendezvous turns]
  return w.messages * message_us + w.rendezvous * rendezvous_us + w.inter_messages * inter_message_us +
         ((w.wire_bytes + turn_bytes) * wire_ns_per_byte + w.reduce_bytes * reduce_ns_per_byte +
          w.inter_wire_bytes * inter_wire_ns_per_byte) *
             1e-3 -
         forward_saved_us;
}

double CostModel::predict_us(ReduceAlgo algo, int ranks, std::size_t count, std::size_t segment_bytes,
                             std::size_t overhead, bool split) const {
  if (steps && ranks >= 2 && count > 0)
    return stepped_us(*this, algo, ranks, count, segment_bytes, overhead, split);
  return predict_us(
      allreduce_work(algo, ranks, count, segment_bytes, eager_bytes, overhead, node_ranks, split));
}

std::size_t CostModel::eager_segment_bytes(std::size_t overhead) const {
  if (eager_bytes <= overhead + sizeof(float)) return 0;
  return (eager_bytes - overhead) / sizeof(float) * sizeof(float);
}

CostModel compose(const LinkCosts& link, const TeeCosts& tee) {
  const auto ns_per_byte = [](double gbps) { return gbps > 0 ? 1.0 / gbps : 0.0; };  // 1 GB/s = 1 ns/B
  return {
      .message_us = link.message_us + tee.message_us,
      .wire_ns_per_byte = ns_per_byte(link.gbps) + ns_per_byte(tee.seal_gbps) + ns_per_byte(tee.open_gbps),
      .reduce_ns_per_byte = ns_per_byte(link.reduce_gbps),
      .eager_bytes = link.eager_bytes,
      .rendezvous_us = link.rendezvous_us,
      .rendezvous_turns = link.rendezvous_turns,
      .node_ranks = 0,
      .inter_message_us = 0,
      .inter_wire_ns_per_byte = 0,
      .forward_message_us = tee.forward_wire ? tee.seal_message_us : 0,
      .forward_ns_per_byte = tee.forward_wire ? ns_per_byte(tee.seal_gbps) : 0,
      .inter_forward_message_us = 0,
      .inter_forward_ns_per_byte = 0,
      .steps = std::nullopt};
}

AlgoChoice choose_algo(const CostModel& m, int ranks, std::size_t count, std::size_t segment_bytes,
                       std::size_t overhead, bool split) {
  const std::size_t eager = m.eager_segment_bytes(overhead);
  const bool cut = segment_bytes != 0 && eager != 0 && eager < segment_bytes;
  AlgoChoice c;
  for (std::size_t i = 0; i < kReduceAlgos.size(); ++i) {
    const auto price = [&](std::size_t seg) {
      return m.predict_us(kReduceAlgos[i], ranks, count, seg, overhead, split);
    };
    c.predicted_us[i] = price(segment_bytes);
    c.segments_of[i] = segment_bytes;
    if (cut) {
      const double eager_us = price(eager);
      if (eager_us < c.predicted_us[i]) {
        c.predicted_us[i] = eager_us;
        c.segments_of[i] = eager;
      }
    }
    // Strictly cheaper only: ties keep the earlier algorithm (the ring first). Split, rd runs rhd's
    // halves (Note [Shard handover], shard_handover.h): priced, but the pick is rhd.
    if (split && kReduceAlgos[i] == ReduceAlgo::Rd) continue;
    if (i == 0 || c.predicted_us[i] < c.predicted_us[static_cast<std::size_t>(c.algo)])
      c.algo = kReduceAlgos[i];
  }
  c.segment_bytes = c.segments_of[static_cast<std::size_t>(c.algo)];
  return c;
}

CostFit fit_cost_model(std::span<const CostSample> samples, std::size_t segment_bytes,
                       std::size_t eager_bytes, bool rendezvous_turns) {
  // Rows scaled to relative error: (terms / measured) . x ~ 1, columns scaled to unit maximum.
  std::vector<Terms> rows;
  Terms scale{1e-30, 1e-30, 1e-30, 1e-30};
  for (const auto& s : samples) {
    const AllreduceWork w = allreduce_work(s.algo, s.ranks, s.count, segment_bytes, eager_bytes);
    if (!(s.us > 0) || w.messages == 0) continue;
    Terms r = terms_of(w, rendezvous_turns);
    for (int i = 0; i < kTerms; ++i) {
      r[i] /= s.us;
      scale[i] = std::max(scale[i], r[i]);
    }
    rows.push_back(r);
  }
  if (rows.size() < 3)
    throw InputError("all-reduce cost fit: need at least three timed all-reduces of ring, rd or rhd");
  for (auto& r : rows) {
    for (int i = 0; i < kTerms; ++i) r[i] /= scale[i];
  }
  // Non-negative least squares by enumeration: every subset of the terms, the best feasible one.
  Terms best{};
  double best_err = -1;
  for (int mask = 1; mask < (1 << kTerms); ++mask) {
    std::array<bool, kTerms> use{};
    for (int i = 0; i < kTerms; ++i) use[i] = (mask & (1 << i)) != 0;
    Terms x{};
    if (!solve_subset(rows, use, x) || std::any_of(x.begin(), x.end(), [](double v) { return v < 0; }))
      continue;
    double err = 0;
    for (const auto& r : rows) err += (dot(r, x) - 1.0) * (dot(r, x) - 1.0);
    if (best_err < 0 || err < best_err) {
      best_err = err;
      best = x;
    }
  }
  CostFit fit;
  fit.model = {.message_us = best[0] / scale[0],
               .wire_ns_per_byte = best[2] / scale[2],
               .reduce_ns_per_byte = best[3] / scale[3],
               .eager_bytes = eager_bytes,
               .rendezvous_us = best[1] / scale[1],
               .rendezvous_turns = rendezvous_turns,
               .node_ranks = 0,
               .inter_message_us = 0,
               .inter_wire_ns_per_byte = 0,
               .forward_message_us = 0,
               .forward_ns_per_byte = 0,
               .inter_forward_message_us = 0,
               .inter_forward_ns_per_byte = 0,
               .steps = std::nullopt};
  double sum = 0;
  for (const auto& r : rows) sum += std::fabs(dot(r, best) - 1.0);
  fit.mean_abs_rel_error = sum / static_cast<double>(rows.size());
  return fit;
}

std::string describe(const CostModel& m) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "message %.2f us, wire %.3f ns/B, reduce %.3f ns/B", m.message_us,
                m.wire_ns_per_byte, m.reduce_ns_per_byte);
  std::string out = buf;
  if (m.eager_bytes > 0) {
    std::snprintf(buf, sizeof buf, ", rendezvous %.2f us above %zu B%s", m.rendezvous_us, m.eager_bytes,
                  m.rendezvous_turns ? ", exchanges taking turns" : "");
    out += buf;
  }
  if (m.node_ranks > 0) {
    std::snprintf(buf, sizeof buf, ", nodes of %d: +%.2f us, +%.3f ns/B between them", m.node_ranks,
                  m.inter_message_us, m.inter_wire_ns_per_byte);
    out += buf;
  }
  return out;
}

}  // namespace tt::comm
