// Small collectives over a Transport, every message through a Channel (so TEE mode seals them too):
// broadcast (initial parameters), barrier, allgather of fixed-size blobs (config and parameter
// digests for agreement and replica checks).
//
// All ranks must call the same collectives in the same order with the same `seq` (the caller's
// sequence number: it goes into MessageContext::bucket so a sealing channel binds each message to the
// call it belongs to). Messages use their own tags (tags::kBroadcast, ...) so they never match ring
// traffic.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/channel.h"
#include "comm/transport.h"
#include "core/profiler.h"

namespace tt::comm {

class Collectives {
 public:
  // Plaintext collectives (an internal PlainChannel).
  explicit Collectives(Transport& transport, Profiler* profiler = nullptr);
  Collectives(Transport& transport, Channel& channel, Profiler* profiler = nullptr);
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  // Copies root's `data` into every rank's `data` (same size everywhere). Pipelined chain
  // root -> root+1 -> ... in segments of segment_bytes, each hop sealed separately; with a
  // pass-through channel bytes move straight from and into `data`.
  void broadcast(std::span<std::byte> data, int root, std::uint64_t seq = 0);
  void broadcast(std::span<float> data, int root, std::uint64_t seq = 0) {
    broadcast(std::as_writable_bytes(data), root, seq);
  }

  // Returns once every rank has entered. Dissemination barrier: ceil(log2 P) rounds of empty
  // messages (a sealing channel still authenticates them: wire = its overhead).
  void barrier(std::uint64_t seq = 0);

  // Every rank contributes `mine` (same size on every rank); returns all contributions concatenated in
  // rank order: (P, mine.size()) bytes. Ring allgather, P-1 hops.
  std::vector<std::byte> allgather(std::span<const std::byte> mine, std::uint64_t seq = 0);

  std::size_t segment_bytes() const { return segment_bytes_; }
  void set_segment_bytes(std::size_t b) { segment_bytes_ = std::max<std::size_t>(b, 1); }

 private:
  void send_sealed(int peer, int tag, const MessageContext& ctx, std::span<const std::byte> plain,
                   std::vector<std::byte>& wire, Request& req);
  void recv_opened(int peer, int tag, const MessageContext& ctx, std::span<std::byte> plain);
  std::size_t wait(Request& r, const MessageContext& ctx);

  Transport& t_;
  PlainChannel plain_;
  Channel* channel_;
  Profiler* prof_;
  std::size_t segment_bytes_ = std::size_t{1} << 20;
  std::vector<std::byte> wire_in_;  // one message: (segment_bytes + overhead,)
};

// First rank whose blob differs from rank 0's in an allgather result of (P, blob) bytes; -1 if all agree.
int first_mismatch(std::span<const std::byte> gathered, std::size_t blob);

}  // namespace tt::comm
