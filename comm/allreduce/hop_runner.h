// HopRunner: one step ("hop") of an all-reduce algorithm, the piece every algorithm shares
// (docs/design.md §5). A hop sends one range of the buffer to one peer and receives one range from
// one peer (either may be absent), adding what arrives into the buffer (a reduce hop) or storing it
// there (a gather hop). The ring (ring_allreduce.h), recursive doubling and recursive halving-doubling
// (recursive_allreduce.h) are lists of hops; this runs them, so every algorithm cuts, seals, posts,
// checks, opens and adds its messages the same way:
//
// - Each range travels as segments (SegmentLayout); every receive of a hop is posted first (per window
//   when the memory's transport needs matched windows: Note [Posting receives], reduce_memory.h).
// - Note [Eager sends] (send_schedule.h): the channel and the memory each say when a hop's sends may go
//   out, and the ring runs the stricter (send_schedule below). Eager: every send is posted up front and
//   receives are finished in order; reduce hops receive into 1 MiB of cycling segment slots; when the next
//   hop sends exactly the range a reduce hop receives and the algorithm asks (Hop::fuse), each segment goes
//   out as soon as it is added in (the ring's last scatter-reduce hop and its first all-gather hop, a
//   fold and the first exchange, ...). HopRunner::begin asks it once per call.
// - Sealed: "seal and send window k, finish window k" for windows of parallelism() segments.
// - A hop whose send and receive ranges are the same (recursive doubling's exchange) adds segment k
//   only once its own send of segment k has completed: the send reads the memory the add writes.
// - Plaintext on a buffer shared with the transport (Note [Shared buffers], shm_transport.h): a reduce
//   hop whose ranges do not overlap posts its receives as sums straight into the buffer, which the
//   transport adds from the peer's memory: no slots and no add here, so those adds are timed as the
//   receive's wait, not as the reduce phase.
//
// Errors (docs/design.md §5): a late, short or unopenable message is fatal and the exception names
// this rank, the algorithm and the message's full context (its phase names the algorithm's step).
#pragma once
#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "comm/allreduce/ring_geometry.h"
#include "comm/channel.h"
#include "comm/reduce_memory.h"
#include "comm/transport.h"
#include "core/profiler.h"

namespace tt::comm {

// One direction of a hop: the peer (kNoPeer: nothing goes this way), the range of the buffer, and
// what the message context says about it.
inline constexpr int kNoPeer = -2;
struct HopSide {
  int peer = kNoPeer;
  ElemRange range{};
  std::uint32_t block = 0;  // MessageContext::chunk
  int origin = 0;           // MessageContext::origin
  bool active() const { return peer != kNoPeer; }
};

struct Hop {
  MessagePhase phase = MessagePhase::ScatterReduce;
  std::uint32_t index = 0;  // MessageContext::hop
  HopSide send;
  HopSide recv;
  bool reduce = false;  // received segments are added into the buffer (else they land in it)
  // The next hop sends exactly the range this one reduces: in plaintext, send each segment as soon as
  // it is added in (the ring's last scatter-reduce hop into its first all-gather hop, and the like).
  bool fuse = false;
  // The ring's forward-ciphertext all-gather: one sealed object per block, labelled by its origin
  // (hop 0, sender = origin, receiver kAnyRank); `reseal` false forwards what the last hop received.
  bool forwarded = false;
  bool reseal = true;
  // The group a forwarded hop's sealed objects travel in: the world (the flat ring), or a sub-group
  // with streams of its own (the hierarchical all-gathers: Note [Sub-group streams], comm/channel.h).
  SubGroup group{};
};

// Which collective a call's hops make: the all-reduce, or one of its halves (sharded data parallelism:
// Note [Shard handover], shard_handover.h).
enum class Collective : std::uint8_t { Allreduce, ReduceScatter, AllGather };
// "allreduce", "reduce-scatter", "all-gather": the trace's label for a call.
const char* collective_label(Collective c);

// A call's hops as HopRunner::run_plan keeps them, and the key they are kept under: an algorithm's own
// variant (its `kind`), the collective and the buffer's count. A bucket's size is fixed for a run, so
// every call after a bucket's first reuses its plan.
struct PlanKey {
  int kind = 0;
  Collective what = Collective::Allreduce;
  std::size_t count = 0;
  auto operator<=>(const PlanKey&) const = default;
};
struct HopPlan {
  std::vector<Hop> hops;
  std::size_t widest = 0;  // the largest range any hop sends or receives (elements)
};
// What run_plan needs of a call beyond the plan: the algorithm's name for errors (it must outlive the
// call), its segments (0: whole ranges), the per-message timeout (0: the transport's) and tag.
struct PlanCall {
  const std::string* name = nullptr;
  std::size_t segment_bytes = 0;
  std::chrono::milliseconds timeout{0};
  int tag = tags::kRing;
};

// The one question the ring asks its channel and memory: the stricter of their schedules.
inline SendSchedule send_schedule(const Channel& channel, const ReduceMemory& memory) {
  return stricter(channel.send_schedule(), memory.send_schedule());
}

// Throws InputError when a sealing channel works on another memory than the algorithm's buffers.
void check_channel_memory(const std::string& algorithm, const Channel& channel, const ReduceMemory& memory);

class HopRunner {
 public:
  // All references must outlive this.
  HopRunner(Transport& transport, Channel& channel, ReduceMemory& memory, Profiler* profiler);
  HopRunner(const HopRunner&) = delete;
  HopRunner& operator=(const HopRunner&) = delete;

  // Before a call's hops: the algorithm's name for errors ("ring all-reduce"; it must outlive the
  // call), its segments, the largest range any hop sends or receives (elements), the caller's message
  // id (step, bucket), and the per-message timeout (0: the transport's) and tag.
  void begin(const std::string& name, const SegmentLayout& layout, std::size_t max_range,
             const MessageContext& id, std::chrono::milliseconds timeout, int tag);
  // Runs hop `h` on data; `next` (null for the last hop) is the hop that follows, for fusion.
  void run(float* data, const Hop& h, const Hop* next);
  // Runs a call's hops in order.
  void run_all(float* data, std::span<const Hop> hops);
  // A whole call of an algorithm that plans its hops once per key (recursive, hierarchical): the plan
  // of `key` (made by `make` the first time), begin() at its widest range, memory().wait_queued() (the
  // first sends read `data`: whatever produced it must be done), run_all, and the call traced under
  // collective_label(key.what).
  void run_plan(const PlanKey& key, const std::function<std::vector<Hop>()>& make, float* data,
                const MessageContext& id, const PlanCall& call);

  Channel& channel() { return *channel_; }
  ReduceMemory& memory() { return *memory_; }
  Transport& transport() { return t_; }

 private:
  // One call's settings, set whole by begin(): nothing of an earlier call's survives into the next.
  struct Call {
    const std::string* name = nullptr;  // the algorithm's, for errors
    int rank = 0;
    SegmentLayout layout;
    MessageContext id{};
    std::chrono::milliseconds timeout{0};
    int tag = tags::kRing;
    ReduceScratch scratch;
    std::size_t reduce_slots = 0;  // 0: reduce receives land at their offset in the range's scratch
    SendSchedule schedule = SendSchedule::Eager;  // send_schedule(channel, memory)
    bool eager = false;      // schedule is Eager: sends posted up front, reduce slots, fusion
    bool host_sums = false;  // plaintext on memory whose adds the transport may do
    // The one thing a hop hands the next: its sends are already posted (early_sends_), by a fused hop
    // that sent each segment as it added it.
    bool presend = false;
  };
  // How one hop runs, decided by run() from the hop, the next one and the call: a value handed to that
  // hop's steps and gone with it.
  struct HopMode {
    const Hop* fuse_into = nullptr;  // the next hop, whose segments this one sends as it adds them
    bool summing = false;            // the transport adds on receipt (Note [Shared buffers])
  };

  bool fuses(const Hop& h, const Hop* next) const;
  static bool sends_what_it_adds(const Hop& h);
  HopMode mode_of(float* data, const Hop& h, const Hop* next) const;
  float* reduce_slot(const ElemRange& in, std::size_t k) const;
  void post_receives(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1);
  void send_segments(float* data, const Hop& h, std::size_t k0, std::size_t k1, std::vector<Request>& sent);
  void finish_receives(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1);
  void add_segments(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1);
  MessageContext context(const Hop& h, const HopSide& side, std::size_t seg, int sender, int receiver,
                         std::size_t bytes) const;
  void check_length(std::size_t got, std::size_t expected, int peer, const MessageContext& ctx) const;
  std::size_t wait(Request& r, const MessageContext& ctx);
  void drop_requests();  // abandons every pending request (a failing hop)

  Transport& t_;
  Channel* channel_;
  ReduceMemory* memory_;
  Profiler* prof_;
  Call call_;

  // Request and job lists (capacity kept between calls). recvs_[k] is segment k of the current hop.
  std::vector<Request> sends_;
  std::vector<Request> early_sends_;  // the next hop's, posted by a fused hop
  std::vector<Request> recvs_;
  std::vector<Channel::SealJob> seal_jobs_;
  std::vector<Channel::OpenJob> open_jobs_;
  std::map<PlanKey, HopPlan> plans_;  // run_plan's, one per key seen
};

}  // namespace tt::comm
