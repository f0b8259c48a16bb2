#include "comm/allreduce/shard_handover.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace tt::comm {

namespace {

ElemRange intersect(const ElemRange& a, const ElemRange& b) {
  const std::size_t lo = std::max(a.offset, b.offset);
  const std::size_t hi = std::min(a.offset + a.count, b.offset + b.count);
  return hi > lo ? ElemRange{lo, hi - lo} : ElemRange{lo, 0};
}

// One part of finished sums between its natural owner and its ring owner, in a round of its own.
struct Move {
  int natural = 0;
  int ring = 0;             // owns ring chunk (ring + 1) mod P, which holds `part`
  ElemRange part{};         // never empty
  std::uint32_t round = 0;  // from 1
};

// Every rank's moves, in the order of their elements: each natural range against the ring chunks it meets
// (found by bisection: the chunks are in order), parts already at their ring owner left out.
std::vector<Move> moves_of(int size, std::size_t count, const NaturalOwnership& natural) {
  const auto chunk = [&](std::size_t c) { return balanced_block(count, static_cast<std::size_t>(size), c); };
  const auto chunks = static_cast<std::size_t>(size);
  std::vector<Move> out;
  for (int q = 0; q < size; ++q) {
    const ElemRange mine = natural(q);
    if (mine.count == 0) continue;
    std::size_t lo = 0, hi = chunks;  // the first chunk ending after mine.offset
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      const ElemRange c = chunk(mid);
      if (c.offset + c.count <= mine.offset) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    for (std::size_t c = lo; c < chunks && chunk(c).offset < mine.offset + mine.count; ++c) {
      const int owner = static_cast<int>((c + chunks - 1) % chunks);
      const ElemRange part = intersect(mine, chunk(c));
      if (owner != q && part.count > 0)
        out.push_back(Move{.natural = q, .ring = owner, .part = part, .round = 0});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Move& a, const Move& b) { return a.part.offset < b.part.offset; });
  return out;
}

// Each move takes the first round in which its natural owner sends nothing yet and its ring owner
// receives nothing yet (Note [Shard handover]).
void assign_rounds(int size, std::vector<Move>& moves) {
  std::vector<std::vector<std::uint32_t>> sends(static_cast<std::size_t>(size));  // rounds taken, per rank
  std::vector<std::vector<std::uint32_t>> recvs(static_cast<std::size_t>(size));
  for (Move& m : moves) {
    auto& s = sends[static_cast<std::size_t>(m.natural)];
    auto& r = recvs[static_cast<std::size_t>(m.ring)];
    const auto taken = [&](std::uint32_t k) {
      return std::find(s.begin(), s.end(), k) != s.end() || std::find(r.begin(), r.end(), k) != r.end();
    };
    std::uint32_t k = 1;
    while (taken(k)) ++k;
    m.round = k;
    s.push_back(k);
    r.push_back(k);
  }
}

HopSide side_of(int peer, const ElemRange& part, int ring_owner, int origin, int size) {
  return {peer, part, static_cast<std::uint32_t>((ring_owner + 1) % size), origin};
}

}  // namespace

void handover_hops(int rank, int size, std::size_t count, const NaturalOwnership& natural, bool to_ring,
                   std::vector<Hop>& out) {
  std::vector<Move> moves = moves_of(size, count, natural);
  assign_rounds(size, moves);
  std::map<std::uint32_t, Hop> rounds;  // this rank's, in order
  for (const Move& m : moves) {
    if (m.natural != rank && m.ring != rank) continue;
    Hop& h = rounds[m.round];
    h.phase = to_ring ? MessagePhase::ShardHandover : MessagePhase::ShardHandback;
    h.index = m.round;
    // Chunk: the ring chunk the part belongs to (the receiver's on the way over, the sender's back).
    const int from = to_ring ? m.natural : m.ring;
    const int to = to_ring ? m.ring : m.natural;
    if (from == rank) h.send = side_of(to, m.part, m.ring, rank, size);
    if (to == rank) h.recv = side_of(from, m.part, m.ring, from, size);
  }
  for (const auto& [round, h] : rounds) out.push_back(h);
}

}  // namespace tt::comm
