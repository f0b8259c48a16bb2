// Channel: the message codec every inter-rank message goes through (docs/design.md §4-5).
//
// A channel turns a plaintext segment into wire bytes (seal) and wire bytes back into plaintext
// (open), under a MessageContext that says exactly where the message belongs. With TEE off the
// channel is PlainChannel (wire == plaintext, and the ring sends straight from / receives straight into
// user memory); with TEE on a sealing channel (comm/secure/sealed_channel.h) adds overhead() bytes and binds
// the context as associated data. The collectives are the same code in both cases.
//
// The receiver builds the context it EXPECTS from its own state (step, bucket, its ring position) and
// passes that to open(); nothing of the context is ever read from the wire. A replayed, reordered,
// misrouted or stale message therefore fails to open under a sealing channel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "comm/memory_space.h"
#include "comm/send_schedule.h"

namespace tt::comm {

// Which part of which collective a message belongs to. The phase is bound into a sealed message's
// associated data, so each all-reduce algorithm has phases of its own: a message of one algorithm (or
// step: MessageContext::hop) never opens as another's.
enum class MessagePhase : std::uint8_t {
  ScatterReduce = 0,  // ring: partial sums travelling around the ring
  AllGather = 1,      // ring: finished chunks travelling around the ring
  Broadcast = 2,
  Barrier = 3,
  BlobAllgather = 4,            // small-blob allgather (digests); phase_name() prints "allgather"
  RdFold = 5,                   // recursive doubling: an extra rank's buffer to its partner (P not 2^k)
  RdExchange = 6,               // recursive doubling: step `hop`, whole buffers swapped with rank ^ 2^hop
  RdUnfold = 7,                 // recursive doubling: the result back to the extra rank
  RhdFold = 8,                  // halving-doubling: an extra rank's buffer to its partner
  RhdScatterReduce = 9,         // halving-doubling: step `hop` of the reduce-scatter (halves)
  RhdAllGather = 10,            // halving-doubling: step `hop` of the all-gather (doubling)
  RhdUnfold = 11,               // halving-doubling: the result back to the extra rank
  HierLocalScatterReduce = 12,  // hierarchical: the node's ring scatter-reduce (hier_allreduce.h)
  HierInterScatterReduce = 13,  // hierarchical: scatter-reduce of a node chunk among the nodes
  HierInterAllGather = 14,      // hierarchical: all-gather of a node chunk among the nodes
  HierLocalAllGather = 15,      // hierarchical: the node's ring all-gather
  // Sharded runs with rd, rhd or hier (Note [Shard handover], comm/allreduce/shard_handover.h):
  ShardHandover = 16,  // round `hop`: a finished sum to the rank whose ring shard it is
  ShardHandback = 17,  // round `hop`: a ring shard to the rank whose all-gather starts from it
};
const char* phase_name(MessagePhase p);
// A message of the gradient all-reduce (any algorithm): what the ring_sealed / ring_opened counters
// count (docs/design.md §5's arithmetic).
inline bool is_allreduce_phase(MessagePhase p) {
  return p != MessagePhase::Broadcast && p != MessagePhase::Barrier && p != MessagePhase::BlobAllgather;
}

// An all-gather whose messages a forward-wire run seals once at their owner and forwards unchanged:
// the ring's, and hier's two (Note [Sub-group streams]).
inline bool is_forwardable_phase(MessagePhase p) {
  return p == MessagePhase::AllGather || p == MessagePhase::HierInterAllGather ||
         p == MessagePhase::HierLocalAllGather;
}

inline constexpr int kAnyRank = -1;  // receiver of a group message (forward-wire all-gather)

// Note [Sub-group streams]: a group message (receiver kAnyRank) is sealed once by its origin and
// forwarded unchanged, so every member of the group it travels in must be able to open it, and no rank
// outside that group may hold its key. The flat ring's group is the world. The hierarchical all-reduce's
// all-gathers run in sub-groups (hier_allreduce.h): the ranks of one node, and the ranks with one local
// index across the nodes. Each sub-group has streams of its own, one per sealing member: a key derived
// from the group traffic secret under a label that names the kind and the member list (base, stride,
// size: tee/identity/traffic_keys.h), and its own nonce counter. A member of another sub-group (or the
// world group's streams) never holds that key, so what it seals or forwards cannot be replayed or
// substituted into this sub-group, even with the same step, bucket, phase, chunk and origin; and every
// member opens exactly the messages its origin seals on the stream, in order, so all agree on every
// counter. SealStreams (comm/secure/seal_streams.h) keys the streams; HopRunner::context puts the hop's
// group into the message's context.
enum class GroupKind : std::uint8_t {
  World = 0,       // every rank (the flat ring's forward-wire all-gather)
  Node = 1,        // the ranks of one node
  LocalIndex = 2,  // the ranks with one local index, one per node
};
const char* group_kind_name(GroupKind k);
// The ranks base + stride * i, i < size, of one kind; World (size 0) for every rank.
struct SubGroup {
  GroupKind kind = GroupKind::World;
  int base = 0;
  int stride = 1;
  int size = 0;

  bool world() const { return kind == GroupKind::World; }
  // Member index of `rank`, or -1 when it is not a member.
  int index_of(int rank) const;
  bool operator==(const SubGroup&) const = default;
};

// Where a message belongs. All fields are plain integers so a sealing channel can serialise them into
// associated data; to_string() gives the same fields for error messages.
struct MessageContext {
  std::uint64_t step = 0;    // training step (or a caller-chosen sequence number)
  std::uint32_t bucket = 0;  // gradient bucket within the step (or a sequence number for collectives)
  MessagePhase phase = MessagePhase::ScatterReduce;
  std::uint32_t hop = 0;      // step index within the phase (0..P-2 in the ring); 0 for group messages
  std::uint32_t chunk = 0;    // ring chunk index (0..P-1); block / round for other collectives
  std::uint32_t segment = 0;  // segment index within the chunk
  int origin = 0;             // rank whose data this is (chunk owner in all-gather, root in broadcast)
  int sender = 0;             // rank that put it on this link (== origin for group messages)
  int receiver = 0;           // rank it is for, or kAnyRank for a group message forwarded unchanged
  std::uint64_t length = 0;   // plaintext bytes
  SubGroup group{};           // the group a group message is forwarded in (Note [Sub-group streams])

  bool operator==(const MessageContext&) const = default;
};
std::string to_string(const MessageContext& ctx);

class Channel {
 public:
  Channel() = default;
  virtual ~Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  virtual std::string name() const = 0;
  // Wire bytes per message beyond the plaintext (0 for plaintext; 28 for SealedChannel: a 16-byte AEAD
  // tag and its 12-byte clear header).
  virtual std::size_t overhead() const = 0;
  // True when wire == plaintext, byte for byte: callers then skip seal/open and move user memory
  // directly (zero copies).
  virtual bool pass_through() const = 0;
  // Where seal/open read and write: host memory (the CPU channels) or device memory (the GPU sealing
  // codec, comm/cuda/gpu_sealing_codec.h). A pass-through channel is never called, so fits any memory.
  virtual MemorySpace memory() const { return MemorySpace::Host; }

  // Encodes `plain` into `wire` (wire.size() == plain.size() + overhead()). Called once per message;
  // a sealing channel draws its nonce here, so never call it twice for one message.
  virtual void seal(const MessageContext& ctx, std::span<const std::byte> plain,
                    std::span<std::byte> wire) = 0;
  // Checks and decodes `wire` into `plain` (plain.size() == wire.size() - overhead()) under the context
  // the receiver expects. Throws on any failure; the exception should name to_string(ctx).
  virtual void open(const MessageContext& ctx, std::span<const std::byte> wire,
                    std::span<std::byte> plain) = 0;

  // Batches: the ring hands over up to parallelism() independent messages at once, so a channel with
  // a crypto thread pool (--crypto-threads) or a GPU can seal/open them concurrently. Defaults: one by
  // one. A batch is blocking: when it returns, its outputs are complete (the ring sends them next).
  struct SealJob {
    MessageContext ctx;
    std::span<const std::byte> plain;
    std::span<std::byte> wire;
  };
  struct OpenJob {
    MessageContext ctx;
    std::span<const std::byte> wire;
    std::span<std::byte> plain;
  };
  virtual std::size_t parallelism() const { return 1; }
  virtual void seal_batch(std::span<const SealJob> jobs) {
    for (const auto& j : jobs) seal(j.ctx, j.plain, j.wire);
  }
  virtual void open_batch(std::span<const OpenJob> jobs) {
    for (const auto& j : jobs) open(j.ctx, j.wire, j.plain);
  }

  // A pass-through channel may model crypto that runs elsewhere (the emulated GPU's AES-GCM, see
  // platform/emulated/emulated_device_channel.h): the ring calls these once per message it sends /
  // receives through a pass-through channel, before the send and before the received bytes are used.
  // Default: free. A channel that charges keeps each charge next to its send: it answers InOrder below.
  virtual void charge_seal(const MessageContext& /*ctx*/, std::size_t /*bytes*/) {}
  virtual void charge_open(const MessageContext& /*ctx*/, std::size_t /*bytes*/) {}
  // Note [Eager sends] (send_schedule.h): a pass-through channel that charges nothing lets a hop post
  // every send up front; a sealing one sends each window after sealing it.
  virtual SendSchedule send_schedule() const {
    return pass_through() ? SendSchedule::Eager : SendSchedule::InOrder;
  }
};

// A channel around another (the emulated platform's crossings and per-link routing): every call goes to
// `inner` unless the decorator overrides it, so a decorator spells out only what it adds.
class ChannelDecorator : public Channel {
 public:
  explicit ChannelDecorator(Channel& inner) : inner_(inner) {}  // `inner` must outlive the decorator

  std::string name() const override { return inner_.name(); }
  std::size_t overhead() const override { return inner_.overhead(); }
  bool pass_through() const override { return inner_.pass_through(); }
  MemorySpace memory() const override { return inner_.memory(); }
  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override {
    inner_.seal(ctx, plain, wire);
  }
  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override {
    inner_.open(ctx, wire, plain);
  }
  std::size_t parallelism() const override { return inner_.parallelism(); }
  void seal_batch(std::span<const SealJob> jobs) override { inner_.seal_batch(jobs); }
  void open_batch(std::span<const OpenJob> jobs) override { inner_.open_batch(jobs); }
  void charge_seal(const MessageContext& ctx, std::size_t bytes) override { inner_.charge_seal(ctx, bytes); }
  void charge_open(const MessageContext& ctx, std::size_t bytes) override { inner_.charge_open(ctx, bytes); }
  SendSchedule send_schedule() const override { return inner_.send_schedule(); }

 protected:
  Channel& inner() const { return inner_; }

 private:
  Channel& inner_;
};

// TEE off: wire bytes are the plaintext. seal/open copy (callers normally skip them: pass_through()).
class PlainChannel final : public Channel {
 public:
  std::string name() const override { return "plain"; }
  std::size_t overhead() const override { return 0; }
  bool pass_through() const override { return true; }
  void seal(const MessageContext& ctx, std::span<const std::byte> plain, std::span<std::byte> wire) override;
  void open(const MessageContext& ctx, std::span<const std::byte> wire, std::span<std::byte> plain) override;
};

}  // namespace tt::comm
