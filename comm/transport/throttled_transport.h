// A Transport decorator that limits every link (this rank -> one peer) to a bandwidth, to emulate
// NVLink, PCIe or a network on a machine whose ranks talk through shared memory
// (`teetrain train --link-gbps G`).
//
// Model: each outgoing link is a serial pipe. A send of n bytes starts when the link is free (the end
// of the previous send to that peer), occupies it for latency + n / rate, and completes only then —
// as if the bytes had crossed the link. The bytes themselves are handed to the inner transport at
// once, so a receiver may see them early; but every ring hop waits for its own send as well as its
// receive, and every rank sends as much as it receives, so each hop still takes at least n / rate.
// (Delaying the hand-off instead would need a progress thread that posts sends on its own, and the
// MPI transport is not made for concurrent posting.)
//
// Receives pass straight through. Rate 0 means unlimited (the decorator then adds only latency).
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "core/run_clock.h"

namespace tt::comm {

struct LinkLimit {
  double gbytes_per_s = 0;  // GB/s (1e9 bytes per second) per link; 0 = unlimited
  std::chrono::duration<double, std::micro> latency{0};  // fixed cost added to every message
};

// Per-peer serial links: a message of n bytes starts when its link is free (the end of the previous
// message to that peer), occupies it for latency + n / rate, and is delivered then.
class LinkPacer {
 public:
  // clock: whose time a link is booked in (null: steady_clock; a virtual clock: Note [Virtual time]).
  LinkPacer(int peers, LinkLimit limit, const RunClock* clock = nullptr);
  // One limit per peer (a topology's link classes: core/emulated/topology.h).
  LinkPacer(std::vector<LinkLimit> per_peer, const RunClock* clock = nullptr);
  const LinkLimit& limit() const { return limits_.front(); }  // peer 0's (every peer's without a topology)
  const LinkLimit& limit(int peer) const { return limits_.at(static_cast<std::size_t>(peer)); }
  // Seconds a link needs for n bytes (latency included): peer 0's, and `peer`'s.
  double link_seconds(std::size_t bytes) const { return link_seconds(0, bytes); }
  double link_seconds(int peer, std::size_t bytes) const;
  // Books n bytes on the link to `peer` and returns when they will have crossed it. Thread-safe.
  std::chrono::steady_clock::time_point reserve(int peer, std::size_t bytes);

 private:
  std::vector<LinkLimit> limits_;  // per peer
  const RunClock* clock_;
  std::mutex mu_;  // sends may be posted from more than one thread
  std::vector<std::chrono::steady_clock::time_point> link_free_;  // per peer: when its link is idle
};

class ThrottledTransport final : public Transport {
 public:
  // `inner` must outlive this object. Timeout and wait policy are copied from it.
  ThrottledTransport(Transport& inner, LinkLimit limit);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "throttled(" + inner_.name() + ")"; }

  Request isend(int peer, std::span<const std::byte> data, int tag) override;
  Request irecv(int peer, std::span<std::byte> buffer, int tag) override;

  const LinkLimit& limit() const { return pacer_.limit(); }
  // Seconds the link to `peer` needs for n bytes (latency included).
  double link_seconds(std::size_t bytes) const { return pacer_.link_seconds(bytes); }

 private:
  Transport& inner_;
  LinkPacer pacer_;
};

}  // namespace tt::comm
