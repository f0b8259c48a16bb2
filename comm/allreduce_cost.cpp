#include "comm/allreduce_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/error.h"
#include "comm/recursive_allreduce.h"
#include "comm/ring_geometry.h"

namespace tt::comm {

namespace {

// One rank's hops for `algo` (the ring's labels do not matter here: only ranges and peers).
std::vector<Hop> hops_of(ReduceAlgo algo, int rank, int ranks, std::size_t count) {
  if (algo != ReduceAlgo::Ring) {
    return recursive_hops(algo == ReduceAlgo::Rd ? RecursiveKind::Doubling : RecursiveKind::HalvingDoubling,
                          rank, ranks, count);
  }
  const RingGeometry geo(rank, ranks, count, 0, false, 0);
  std::vector<Hop> out;
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(ranks); ++s)
    out.push_back(geo.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < static_cast<std::uint32_t>(ranks); ++s)
    out.push_back(geo.all_gather_hop(s));
  return out;
}

// A hop's sends and receives overlap: it takes as long as its longer direction.
AllreduceWork work_of(const std::vector<Hop>& hops, std::size_t segment_bytes) {
  std::size_t widest = 0;
  for (const Hop& h : hops) widest = std::max({widest, h.send.range.count, h.recv.range.count});
  const SegmentLayout layout(segment_bytes, widest, 0);
  AllreduceWork w;
  for (const Hop& h : hops) {
    const RingRange out = h.send.active() ? h.send.range : RingRange{};
    const RingRange in = h.recv.active() ? h.recv.range : RingRange{};
    w.messages += static_cast<double>(std::max(layout.segments(out), layout.segments(in)));
    w.wire_bytes += static_cast<double>(std::max(out.count, in.count) * sizeof(float));
    if (h.reduce) w.reduce_bytes += static_cast<double>(in.count * sizeof(float));
  }
  return w;
}

// Solves the normal equations of the columns in `use` (others fixed at 0); false when singular.
bool solve_subset(const std::vector<std::array<double, 3>>& rows, const std::array<bool, 3>& use,
                  std::array<double, 3>& x) {
  std::array<std::array<double, 4>, 3> a{};  // augmented (A^T A | A^T 1)
  for (const auto& r : rows) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += r[i] * r[j];
      a[i][3] += r[i];
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (use[i]) continue;
    a[i] = {0, 0, 0, 0};
    a[i][i] = 1;
    for (int j = 0; j < 3; ++j) {
      if (j != i) a[j][i] = 0;
    }
  }
  for (int c = 0; c < 3; ++c) {  // Gauss-Jordan with partial pivoting
    int piv = c;
    for (int r = c + 1; r < 3; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    if (std::fabs(a[piv][c]) < 1e-12) return false;
    std::swap(a[c], a[piv]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < 4; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < 3; ++i) x[i] = use[i] ? a[i][3] / a[i][i] : 0.0;
  return true;
}

}  // namespace

AllreduceWork allreduce_work(ReduceAlgo algo, int ranks, std::size_t count, std::size_t segment_bytes) {
  AllreduceWork busiest;
  if (ranks < 2 || count == 0) return busiest;
  for (int r = 0; r < ranks; ++r) {
    const AllreduceWork w = work_of(hops_of(algo, r, ranks, count), segment_bytes);
    if (w.messages > busiest.messages ||
        (w.messages == busiest.messages && w.wire_bytes > busiest.wire_bytes))
      busiest = w;
  }
  return busiest;
}

double CostModel::predict_us(const AllreduceWork& w) const {
  return w.messages * message_us +
         (w.wire_bytes * wire_ns_per_byte + w.reduce_bytes * reduce_ns_per_byte) * 1e-3;
}

CostModel compose(const LinkCosts& link, const TeeCosts& tee) {
  const auto ns_per_byte = [](double gbps) { return gbps > 0 ? 1.0 / gbps : 0.0; };  // 1 GB/s = 1 ns/B
  return {
      .message_us = link.message_us + tee.message_us,
      .wire_ns_per_byte = ns_per_byte(link.gbps) + ns_per_byte(tee.seal_gbps) + ns_per_byte(tee.open_gbps),
      .reduce_ns_per_byte = ns_per_byte(link.reduce_gbps)};
}

AlgoChoice choose_algo(const CostModel& m, int ranks, std::size_t count, std::size_t segment_bytes) {
  AlgoChoice c;
  for (std::size_t i = 0; i < kReduceAlgos.size(); ++i) {
    c.predicted_us[i] = m.predict_us(allreduce_work(kReduceAlgos[i], ranks, count, segment_bytes));
    // Strictly cheaper only: ties keep the earlier algorithm (the ring first).
    if (i == 0 || c.predicted_us[i] < c.predicted_us[static_cast<std::size_t>(c.algo)])
      c.algo = kReduceAlgos[i];
  }
  return c;
}

CostFit fit_cost_model(std::span<const CostSample> samples, std::size_t segment_bytes) {
  // Rows scaled to relative error: (features / measured) . x ~ 1, columns scaled to unit maximum.
  std::vector<std::array<double, 3>> rows;
  std::array<double, 3> scale{1e-30, 1e-30, 1e-30};
  for (const auto& s : samples) {
    const AllreduceWork w = allreduce_work(s.algo, s.ranks, s.count, segment_bytes);
    if (!(s.us > 0) || w.messages == 0) continue;
    rows.push_back({w.messages / s.us, w.wire_bytes * 1e-3 / s.us, w.reduce_bytes * 1e-3 / s.us});
    for (int i = 0; i < 3; ++i) scale[i] = std::max(scale[i], rows.back()[i]);
  }
  if (rows.size() < 3)
    throw InputError("all-reduce cost fit: need at least three timed all-reduces of ring, rd or rhd");
  for (auto& r : rows) {
    for (int i = 0; i < 3; ++i) r[i] /= scale[i];
  }
  // Non-negative least squares by enumeration: every subset of the three terms, the best feasible one.
  std::array<double, 3> best{};
  double best_err = -1;
  for (int mask = 1; mask < 8; ++mask) {
    const std::array<bool, 3> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    std::array<double, 3> x{};
    if (!solve_subset(rows, use, x) || std::any_of(x.begin(), x.end(), [](double v) { return v < 0; }))
      continue;
    double err = 0;
    for (const auto& r : rows) {
      const double e = r[0] * x[0] + r[1] * x[1] + r[2] * x[2] - 1.0;
      err += e * e;
    }
    if (best_err < 0 || err < best_err) {
      best_err = err;
      best = x;
    }
  }
  CostFit fit;
  fit.model = {best[0] / scale[0], best[1] / scale[1], best[2] / scale[2]};
  double sum = 0;
  for (const auto& r : rows) sum += std::fabs(r[0] * best[0] + r[1] * best[1] + r[2] * best[2] - 1.0);
  fit.mean_abs_rel_error = sum / static_cast<double>(rows.size());
  return fit;
}

std::string describe(const CostModel& m) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "message %.2f us, wire %.3f ns/B, reduce %.3f ns/B", m.message_us,
                m.wire_ns_per_byte, m.reduce_ns_per_byte);
  return buf;
}

}  // namespace tt::comm
