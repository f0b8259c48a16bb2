// The cost model that picks an all-reduce algorithm per bucket (docs/design.md §5, "Choosing").
//
// An α-β model of the busiest rank's critical path, with the TEE's costs folded into both terms:
//
//   time = messages x message_us + wire bytes x wire_ns_per_byte + added bytes x reduce_ns_per_byte
//          + inter-node messages x inter_message_us + inter-node bytes x inter_wire_ns_per_byte
//
// where, for the TEE mode in use,
//   message_us       = α (latency and software per message) + the TEE's fixed cost per sealed message
//                      (AEAD set-up, nonce and associated data; H100 CC's bounce-buffer crossings, two
//                      per message, when --cc-transfer-us models them)
//   wire_ns_per_byte = 1 / link rate + 1 / seal rate + 1 / open rate (a message is sealed, sent, opened)
//   reduce_ns_per_byte = 1 / add rate
// Messages count segments: a hop of a 4 MiB range in 1 MiB segments is 4 messages. Sealing is priced
// per byte sent: the ring's forward-ciphertext all-gather, which seals less, is priced as re-sealing;
// hier's all-gathers under forward wire (Note [Sub-group streams], comm/channel.h) are priced as they
// run: a forwarded message pays its link and its opening but not the sender's seal (`forward_*`).
//
// The transport's eager limit: MPI sends a message of up to `eager_bytes` (Open MPI's shared-memory
// default: 4 KiB with its header) at once, and a longer one by rendezvous, a request-to-send round trip
// before the data: `rendezvous_us` more per such message. So a message of a few KiB can cost twice
// what two eager halves cost, and `auto` may cut a small bucket's messages into eager-sized segments
// (choose_algo) where the run's segments allow cutting at all (not cc's whole chunks). Over a byte
// stream (TCP) the round trip can cost far more than that: Note [Rendezvous turns].
//
// With an emulated platform's modelled links, on one node or a topology's (CostModel::steps), the model
// follows every rank through its hops instead, each message's seal at its sender and its open at its
// receiver (Note [Each end of a step]): the busiest rank's sum of seal and open on every step that
// crosses between nodes overestimates a flat ring across nodes by up to 2x, and on one node the busiest
// rank's terms priced every message as sealed where the run leaves some in clear.
//
// The coefficients come from `teetrain bench allreduce --calibrate FILE` (fitted to the measured times
// of ring, rd and rhd on the machine, per TEE mode), or from defaults / the emulated platform
// (engine/gradients/allreduce_selection.h). The pick depends only on the coefficients, P, the bucket's size
// and the segment size: inputs every rank agrees on, never a rank's own timing, so every rank picks the same
// algorithm for the same bucket.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/allreduce/allreduce_algo.h"

namespace tt::comm {

// One all-reduce's work along the busiest rank's critical path.
struct AllreduceWork {
  double messages = 0;    // sequential messages (segments)
  double rendezvous = 0;  // of them, those longer than the eager limit
  // Bytes that wait their turn: in hops after the first whose two directions are rendezvous messages
  // between the same two ranks, the shorter direction's bytes (Note [Rendezvous turns]).
  double turn_bytes = 0;
  double wire_bytes = 0;    // bytes sent (sealed and opened in a TEE mode)
  double reduce_bytes = 0;  // bytes added in
  // Of messages and wire_bytes, those of steps that cross between nodes (node_ranks given).
  double inter_messages = 0;
  double inter_wire_bytes = 0;
  // Of messages and wire_bytes, those hier's forward-wire all-gathers send on unsealed (every hop of a
  // sub-group's ring after its first), and of those the ones of crossing steps.
  double forwarded_messages = 0;
  double forwarded_bytes = 0;
  double inter_forwarded_messages = 0;
  double inter_forwarded_bytes = 0;
};
// eager_bytes 0: no limit (no message counts as rendezvous); overhead: wire bytes per message beyond
// its payload (the channel's header and tag). node_ranks > 0: ranks in nodes of that many (the
// hierarchical algorithm's nodes, and which steps cross between them). Note [Steps at the slowest
// link]: the ranks run a collective's steps in lock-step, so a step takes as long as its slowest
// message: a step counts as crossing when any rank's message of that step crosses between nodes
// (every step of a flat ring over more than one node does; the hierarchical algorithm's inter-node
// steps only). split (--shard): the bucket's reduce-scatter and all-gather, with the rounds that
// move each algorithm's finished sums to and from the ring's shard layout (Note [Shard handover],
// shard_handover.h; none for the ring, whose halves are its all-reduce's hops).
AllreduceWork allreduce_work(ReduceAlgo algo, int ranks, std::size_t count, std::size_t segment_bytes,
                             std::size_t eager_bytes = 0, std::size_t overhead = 0, int node_ranks = 0,
                             bool split = false);

// The ranks `rank` sends to with `algo` (its all-reduce, or split: its two halves with their shard
// handover), in the order its hops first reach them: the receivers an on-path adversary of rank
// `rank`'s sends may meet (comm/adversary/adversary_spec.h, GradientRoute).
std::vector<int> send_peers(ReduceAlgo algo, int rank, int ranks, int node_ranks = 0, bool split = false);

// Note [Each end of a step]: in a run (HopRunner), a rank seals its hop's sends, posts them, then waits
// for its hop's receive, opens it and adds it in. So a message's seal (with what its sender pays to get
// it out: a bounce-buffer crossing) holds its sender, its open (and the crossing back in) its receiver,
// and its link neither: the sender goes on to its next hop while the message travels, and each rank
// waits only for its own peer's message. A flat ring across nodes whose crossing message is sealed at
// one rank and opened at the next therefore costs about max(seal, open) a step once it runs, not seal +
// open at every step; a rank whose messages are not sealed (inside a node on h100-ppcie) pays nothing
// but its links. With StepCosts the model follows every rank through its hops that way, each message
// priced at each end by its route (Route: as message_route decides it, core/emulated/emulated_gpu.h),
// and an all-reduce takes as long as its last rank: the emulated run's own charges, step by step. Relied
// on by CostModel::predict_us (below), default_cost_model (engine/gradients/allreduce_selection.cpp),
// which prices each route as the run's channels charge it, and tests/cli/cc_platforms.sh.

// What one message costs: a fixed part and its bytes.
struct MessageCost {
  double us = 0;
  double ns_per_byte = 0;
  double of(double messages, double bytes) const { return messages * us + bytes * ns_per_byte * 1e-3; }
};
// A message's route (Note [Each end of a step]): between two GPUs of one node, between nodes, or a
// group message (the ring's forwarded all-gather: one sealed object for every rank, which the run
// routes as a message that may leave the node).
enum class Route : std::uint8_t { Inside, Between, Group };
// A sealed message's costs at its sender's end (seal and crossing out) and its receiver's (crossing in
// and open); zero where the route leaves it unsealed.
struct MessageEnds {
  MessageCost seal;
  MessageCost open;
};
struct StepCosts {
  std::array<MessageCost, 2> link{};  // a message on the link inside a node, between nodes
  std::array<MessageEnds, 3> ends{};  // by Route
  bool forward_all_gather = false;    // the ring's all-gather forwards the owner's seal (no re-seal)
};

// Note [Rendezvous turns]: Open MPI's TCP transport sends a rendezvous message's data only after the
// receiver's go-ahead (ob1's PUT or ACK), and that go-ahead travels on the same byte stream as the
// receiver's own data to the sender, queued behind whatever the receiver has already handed it. So
// when two ranks exchange rendezvous messages in one hop (a ring of two, recursive doubling, halving-
// doubling) and one of them has queued its own data before it reads the other's request, the other's
// data waits until that data has left: the two directions take turns, and the hop's bytes cross the
// link in about twice the time. Ranks that start a hop together (the first hop after a barrier) see
// each other's requests before either has queued data, so the model charges the turns from the second
// hop on: `turn_bytes` at the wire rate, where the link is such a stream (`rendezvous_turns`). A ring of
// more than two receives from one neighbour and sends to the other: its go-aheads travel on streams
// that carry no data back, and it never takes turns. Seen in a trace (strace of the bench's P = 2 ring
// between two emulated hosts, 1 MiB segments over a 200 Mbit/s link, 2026-11-30): the all-gather's
// go-ahead left one rank 19 ms after its peer's request arrived, behind 2 MiB of its own data, and the
// link towards it stood idle for 79 ms. Relied on by tools/validate_emulator.py's part (c).
struct CostModel {
  double message_us = 0;
  double wire_ns_per_byte = 0;
  double reduce_ns_per_byte = 0;
  std::size_t eager_bytes = 0;    // the transport's eager limit in wire bytes (0: none modelled)
  double rendezvous_us = 0;       // extra per message longer than eager_bytes
  bool rendezvous_turns = false;  // the go-ahead shares the data's byte stream (Note [Rendezvous turns])
  // A topology (core/emulated/topology.h): ranks per node (0: one node), and what a message and a byte
  // of a step crossing between nodes cost beyond the node link's message_us and wire_ns_per_byte.
  int node_ranks = 0;
  double inter_message_us = 0;
  double inter_wire_ns_per_byte = 0;
  // What a forwarded message does not pay: the sender's seal, per message and per byte (0 where the
  // all-gathers re-seal at every hop), and what that saves more on a step between nodes.
  double forward_message_us = 0;
  double forward_ns_per_byte = 0;
  double inter_forward_message_us = 0;
  double inter_forward_ns_per_byte = 0;
  // Given (an emulated platform's modelled links, one node or more): every rank's hops priced at each
  // end (Note [Each end of a step]); none (a calibration, real links): the busiest rank's work at the
  // terms above.
  std::optional<StepCosts> steps = std::nullopt;
  double predict_us(const AllreduceWork& w) const;
  // One all-reduce of `count` floats (the arguments as allreduce_work's): by steps where given.
  double predict_us(ReduceAlgo algo, int ranks, std::size_t count, std::size_t segment_bytes,
                    std::size_t overhead = 0, bool split = false) const;
  // The segment that keeps a message eager: the largest whole-float payload that fits with `overhead`
  // (0 when no limit is modelled or nothing fits).
  std::size_t eager_segment_bytes(std::size_t overhead) const;
};

// The model's parts, for defaults and emulated platforms.
struct LinkCosts {
  double message_us = 0;          // α
  double gbps = 1;                // wire, GB/s (1e9 bytes)
  double reduce_gbps = 1;         // the add
  std::size_t eager_bytes = 0;    // the transport's eager limit (0: none)
  double rendezvous_us = 0;       // extra per longer message
  bool rendezvous_turns = false;  // Note [Rendezvous turns]
};
struct TeeCosts {
  double message_us = 0;  // per sealed message (0 with TEE off)
  double seal_gbps = 0;   // 0: nothing is sealed
  double open_gbps = 0;
  // The all-gathers forward ciphertext (TEE fast): a forwarded message skips the sender's part of
  // message_us (seal_message_us) and its bytes at seal_gbps.
  bool forward_wire = false;
  double seal_message_us = 0;
};
CostModel compose(const LinkCosts& link, const TeeCosts& tee);

struct AlgoChoice {
  ReduceAlgo algo = ReduceAlgo::Ring;
  std::size_t segment_bytes = 0;  // the picked algorithm's segments
  std::array<double, kReduceAlgos.size()>
      predicted_us{};  // per kReduceAlgos entry, at its cheaper segmentation
  std::array<std::size_t, kReduceAlgos.size()> segments_of{};  // per kReduceAlgos entry: that segmentation
};
// The cheapest algorithm for one all-reduce of `count` floats (ties: ring, rd, rhd, hier), each
// at the run's segments or, where the model has an eager limit and segment_bytes is not 0 (whole
// chunks), at eager-sized ones if the model prices them lower (ties: the run's). split: priced as the
// halves (allreduce_work); rd, whose halves are rhd's, is priced but never picked.
AlgoChoice choose_algo(const CostModel& m, int ranks, std::size_t count, std::size_t segment_bytes,
                       std::size_t overhead = 0, bool split = false);

// One measured all-reduce (the slowest rank's median time).
struct CostSample {
  ReduceAlgo algo = ReduceAlgo::Ring;
  int ranks = 2;
  std::size_t count = 0;
  double us = 0;
};
struct CostFit {
  CostModel model;
  double mean_abs_rel_error = 0;  // over the samples
};
// Non-negative least squares on relative errors (every size counts alike, 1 KiB as much as 256 MiB).
// With eager_bytes > 0 the rendezvous cost is fitted too (samples on both sides of the limit tell it
// apart from the per-message cost). rendezvous_turns: the samples' link takes turns (Note [Rendezvous
// turns]), so the wire term counts each sample's turn bytes too, and the model says so. Throws InputError
// when there are fewer than three usable samples.
CostFit fit_cost_model(std::span<const CostSample> samples, std::size_t segment_bytes,
                       std::size_t eager_bytes = 0, bool rendezvous_turns = false);

// "message 12.1 us, wire 0.41 ns/B, reduce 0.10 ns/B"
std::string describe(const CostModel& m);

}  // namespace tt::comm
