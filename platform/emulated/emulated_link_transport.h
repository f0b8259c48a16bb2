// EmulatedLinkTransport: a GPU-to-GPU link (NVLink) that carries no payload, for emulated-GPU studies
// (`teetrain train --compute emulate --link emulate`).
//
// Why: under --compute emulate the gradients are synthetic and, on a real machine, would live in GPU
// memory and cross NVLink at hundreds of GB/s without touching a CPU. Moving them through shared
// memory instead costs these CPUs about as much as AES-GCM does, which hides the very effect the study
// measures (TEE off would pay the CPU copies the GPUs never pay). So plaintext ring messages of an
// emulated GPU are modelled here: each send transmits a 16-byte token (length, arrival time) and the
// link is booked at its rate (LinkPacer, as ThrottledTransport); the send completes when the bytes
// would have crossed, and the receive completes at the same moment, reporting the full length. The
// receive buffer is NOT written: its bytes are whatever it held (synthetic gradients stay synthetic).
//
// Wall-clock time: only for pass-through (plaintext) traffic of synthetic data; messages the CPU seals
// (TEE cc) are real bytes in host memory, as H100 CC's bounce buffers are, and go through the real
// transport. Arrival times use the monotonic clock, shared by the processes of one host; an arrival
// time that is implausibly far off (ranks on different hosts) is ignored and the token's arrival
// counts instead.
//
// Virtual time (Note [Virtual time], run_clock.h): every ring message of an emulated run is a token,
// sealed ones too. The link is booked in the sender's virtual time; the token carries the arrival
// time, and the receive completes at once, moving the receiver's time to max(its time, arrival).
// Nothing is waited for. `carry` > 0: the first `carry` bytes of each message travel in the token and
// land in the receive buffer — a sealed token (platform/emulated/virtual_seal_channel.h), so that a flipped,
// replayed, reordered or truncated message is still caught by the real tag check.
//
// Token: be64 length || be64 arrival (clock ticks) || max(carry, 16) bytes (the carried bytes, else
// zeros that nothing reads: a flip there changes nothing).
//
// Topology (core/emulated/topology.h): each peer's link may be of another class (NVLink or PCIe inside
// a node, InfiniBand or RoCE between nodes): a message is booked at its pair's rate and latency.
//
// Same contract as the wrapped transport otherwise: ordering per (peer, tag), a message longer than the
// receive buffer is a RunError, one thread at a time per request.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "comm/transport.h"
#include "comm/transport/throttled_transport.h"
#include "core/profiler.h"

namespace tt::platform {

class EmulatedLinkTransport final : public comm::Transport {
 public:
  static constexpr std::size_t kHeaderBytes = 16;  // be64 length || be64 arrival
  static constexpr std::size_t kMinBody = 16;      // token body when nothing is carried

  // `inner` and `clock` must outlive this object; timeout and wait policy are copied from `inner`.
  // limit.gbytes_per_s must be > 0 (an emulated link has a rate). clock: virtual time when it
  // is_virtual() (null: wall clock). carry: bytes of each message that travel (virtual time only).
  // profiler: virtual time splits each receive's wait into the link and wait phases (null: not reported).
  EmulatedLinkTransport(comm::Transport& inner, comm::LinkLimit limit, RunClock* clock = nullptr,
                        std::size_t carry = 0, Profiler* profiler = nullptr);
  // A topology's links: per_peer[p] is the class of the link to peer p (size() entries, each > 0 GB/s);
  // `label` names them in name() ("2 nodes x 8 GPUs, NVLink inside, InfiniBand NDR between").
  EmulatedLinkTransport(comm::Transport& inner, std::vector<comm::LinkLimit> per_peer, RunClock* clock,
                        std::size_t carry, Profiler* profiler, std::string label);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override;  // "emulated-link(450 GB/s)", "emulated-link(<label>)"

  comm::Request isend(int peer, std::span<const std::byte> data, int tag) override;
  comm::Request irecv(int peer, std::span<std::byte> buffer, int tag) override;

  double link_seconds(std::size_t bytes) const { return pacer_.link_seconds(bytes); }
  double link_seconds(int peer, std::size_t bytes) const { return pacer_.link_seconds(peer, bytes); }

 private:
  std::size_t token_bytes() const { return kHeaderBytes + std::max(carry_, kMinBody); }

  comm::Transport& inner_;
  RunClock* clock_;  // virtual time, else null
  std::size_t carry_;
  Profiler* prof_;
  comm::LinkPacer pacer_;
  std::string label_;  // a topology's (empty: one rate for every peer)
};

}  // namespace tt::platform
