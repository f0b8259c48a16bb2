#include "comm/ring_allreduce.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/error.h"
#include "tee/errors.h"

namespace tt::comm {

namespace {

// Plaintext scatter-reduce receives land in slots of this many bytes in all (see prepare()).
constexpr std::size_t kReduceSlotBytes = std::size_t{1} << 20;

std::span<std::byte> bytes_of(float* p, std::size_t n) {
  return {reinterpret_cast<std::byte*>(p), n * sizeof(float)};
}

void count(Profiler* prof, Counter messages, Counter bytes, std::size_t n) {
  if (prof == nullptr) return;
  prof->add(messages, 1);
  prof->add(bytes, static_cast<int64_t>(n));
}

// "ring all-reduce" on the host, "device ring all-reduce" on a GPU: errors say which ring failed.
std::string ring_name(const RingMemory& m) {
  return m.space() == MemorySpace::Host ? "ring all-reduce" : "device ring all-reduce";
}

}  // namespace

const char* all_gather_mode_name(AllGatherMode m) {
  return m == AllGatherMode::PerHop ? "per_hop" : "forward_wire";
}

RingAllreduce::RingAllreduce(Transport& transport, RingOptions options, Profiler* profiler)
    : t_(transport), channel_(&plain_), memory_(&host_), opt_(std::move(options)), prof_(profiler) {}

RingAllreduce::RingAllreduce(Transport& transport, Channel& channel, RingOptions options, Profiler* profiler)
    : t_(transport), channel_(&channel), memory_(&host_), opt_(std::move(options)), prof_(profiler) {}

RingAllreduce::RingAllreduce(Transport& transport, Channel& channel, RingMemory& memory, RingOptions options,
                             Profiler* profiler)
    : t_(transport), channel_(&channel), memory_(&memory), opt_(std::move(options)), prof_(profiler) {
  if (!channel.pass_through() && channel.memory() != memory.space()) {
    throw InputError("ring all-reduce: channel " + channel.name() + " seals " +
                     memory_space_name(channel.memory()) + " memory but the ring's buffers are in " +
                     memory_space_name(memory.space()) + " memory");
  }
}

void RingAllreduce::prepare(std::size_t count, const MessageContext& id) {
  rank_ = t_.rank();
  size_ = t_.size();
  const bool pass = channel_->pass_through();
  geo_ = RingGeometry(rank_, size_, count, opt_.segment_bytes, id,
                      !pass && opt_.all_gather == AllGatherMode::ForwardWire, channel_->overhead());
  // Plaintext scatter-reduce receives cycle through a few segment-sized slots instead of a whole
  // chunk of scratch: a slot is added in right after it lands, while it is still in cache, and the
  // scratch stays small enough to stay there (a chunk-sized one streams through memory at 16 MiB).
  const std::size_t segs = geo_.segments(RingRange{0, geo_.max_chunk()});
  eager_ = eager_sends();
  reduce_slots_ = 0;
  if (eager_ && segs > 2) {
    reduce_slots_ =
        std::clamp<std::size_t>(kReduceSlotBytes / (geo_.segment_elems() * sizeof(float)), 2, segs);
  }
  const std::size_t reduce_floats =
      reduce_slots_ > 0 ? reduce_slots_ * geo_.segment_elems() : geo_.max_chunk();
  scratch_ = memory_->scratch(reduce_floats, pass ? 0 : geo_.wire_bytes());
}

// Where segment k of incoming chunk `in` lands in the reduce scratch.
float* RingAllreduce::reduce_slot(const RingRange& in, std::size_t k) const {
  if (reduce_slots_ == 0) return scratch_.reduce + (geo_.segment(in, k).offset - in.offset);
  return scratch_.reduce + (k % reduce_slots_) * geo_.segment_elems();
}

void RingAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id) {
  if (t_.size() == 1 || count == 0) return;
  if (data == nullptr) throw RunError(ring_name(*memory_) + ": null buffer");
  const auto begin = Profiler::Clock::now();
  prepare(count, id);
  early_sends_.clear();
  memory_->wait_queued();  // the first sends read `data`: whatever produced it must be done
  const auto p = static_cast<std::uint32_t>(size_);
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.all_gather_hop(s));
  if (prof_ != nullptr && prof_->tracing())
    prof_->record("allreduce", Lane::Comm, begin, Profiler::Clock::now());
}

void RingAllreduce::run_hop(float* data, const RingHop& h) {
  const std::size_t n_in = geo_.segments(geo_.chunk(h.recv_chunk));
  const std::size_t n_out = geo_.segments(geo_.chunk(h.send_chunk));
  const bool windowed = memory_->windowed_receives();
  sends_.clear();
  recvs_.clear();
  // Post every receive of the hop first, unless the memory's transport needs matched windows; then,
  // when nothing has to be sealed first, every send: the neighbour pulls our segments at its own pace
  // while we pull and add its segments (no lock-step between the two).
  const bool slotted = reduce_slots_ > 0 && h.phase == MessagePhase::ScatterReduce;
  if (!windowed) post_receives(data, h, 0, slotted ? std::min(n_in, reduce_slots_) : n_in);
  if (fused_gather(h)) {
    std::swap(sends_, early_sends_);  // sent segment by segment as the last scatter-reduce hop added them
  } else if (eager_) {
    send_segments(data, h, 0, n_out, sends_);
  }
  // Pipeline, in windows of w segments (w = the channel's crypto parallelism, 1 by default): our
  // segments [k, k+w) are sealed and go out, then the neighbour's segments [k, k+w) are finished.
  // Every rank forms the same windows.
  const std::size_t w = std::max<std::size_t>(channel_->parallelism(), 1);
  for (std::size_t k = 0; k < std::max(n_in, n_out); k += w) {
    if (windowed && k < n_in) post_receives(data, h, k, std::min(n_in, k + w));
    if (!eager_ && k < n_out) send_segments(data, h, k, std::min(n_out, k + w), sends_);
    if (k < n_in) {
      finish_receives(data, h, k, std::min(n_in, k + w));
    } else if (windowed) {
      (void)t_.test(sends_.back());  // a window with sends only: push them out now (NCCL group)
    }
  }
  // Sends must complete before their memory (user data or the wire scratch) is touched by the next hop.
  const int next = (rank_ + 1) % size_;
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    wait(sends_[k], geo_.context(h, h.send_chunk, k, rank_, next,
                                 geo_.segment(geo_.chunk(h.send_chunk), k).count * sizeof(float)));
  }
  // The adds of this hop must finish before the next hop sends the reduced chunk and reuses the scratch.
  memory_->wait_queued();
  // Forward-wire: the ciphertext received in this hop is exactly what we send in the next one.
  if (geo_.forwarding(h)) std::swap(scratch_.wire_in, scratch_.wire_out);
}

// True when a hop's outgoing segments are ready as the hop starts: user memory goes on the wire as it
// is (pass-through), no modelled device work must precede each send (charges, an emulated GPU's adds),
// and the transport takes sends in any grouping (not windowed).
bool RingAllreduce::eager_sends() const {
  return channel_->pass_through() && !channel_->charges() && !memory_->modelled() &&
         !memory_->windowed_receives();
}

// True for the first all-gather hop of a fused call: its segments went out during the last
// scatter-reduce hop, each as soon as it was added in (still in cache, and without waiting for the
// hop's end). Its chunk is the one that hop finished, so only timing changes, never a byte or context.
bool RingAllreduce::fused_gather(const RingHop& h) const {
  return eager_ && h.phase == MessagePhase::AllGather && h.index == 0;
}

// Posts the receives of segments [k0, k1) of the incoming chunk.
void RingAllreduce::post_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int prev = (rank_ + size_ - 1) % size_;
  const RingRange in = geo_.chunk(h.recv_chunk);
  const bool pass = channel_->pass_through();
  const bool reduce = h.phase == MessagePhase::ScatterReduce;
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    std::span<std::byte> dst;
    if (!pass) {
      dst = scratch_.wire_in.subspan(geo_.wire_offset(k), seg.count * sizeof(float) + channel_->overhead());
    } else if (reduce) {
      dst = bytes_of(reduce_slot(in, k), seg.count);
    } else {
      dst = bytes_of(data + seg.offset, seg.count);  // all-gather lands in user memory: zero copies
    }
    recvs_.push_back(t_.irecv(prev, dst, opt_.tag));
  }
}

// Seals segments [k0, k1) of the outgoing chunk (one batch) and posts their sends, appended to `sent`.
void RingAllreduce::send_segments(float* data, const RingHop& h, std::size_t k0, std::size_t k1,
                                  std::vector<Request>& sent) {
  const int next = (rank_ + 1) % size_;
  const RingRange out = geo_.chunk(h.send_chunk);
  const bool pass = channel_->pass_through();
  // Forward-wire hops after the first resend the owner's sealed bytes, already in the wire scratch.
  const bool reseal = !pass && !(geo_.forwarding(h) && h.index > 0);
  seal_jobs_.clear();
  for (std::size_t k = k0; k < k1 && reseal; ++k) {
    const RingRange seg = geo_.segment(out, k);
    const auto plain = bytes_of(data + seg.offset, seg.count);
    seal_jobs_.push_back(
        {geo_.context(h, h.send_chunk, k, rank_, next, plain.size()), plain,
         scratch_.wire_out.subspan(geo_.wire_offset(k), plain.size() + channel_->overhead())});
  }
  if (!seal_jobs_.empty()) channel_->seal_batch(seal_jobs_);  // blocking: wire bytes complete on return
  for (std::size_t k = k0; k < k1 && pass; ++k) {
    const std::size_t bytes = geo_.segment(out, k).count * sizeof(float);
    channel_->charge_seal(geo_.context(h, h.send_chunk, k, rank_, next, bytes), bytes);
  }
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(out, k);
    std::span<const std::byte> wire = bytes_of(data + seg.offset, seg.count);  // pass-through: user memory
    if (!pass) wire = scratch_.wire_out.subspan(geo_.wire_offset(k), wire.size() + channel_->overhead());
    sent.push_back(t_.isend(next, wire, opt_.tag));
    count(prof_, Counter::MessagesSent, Counter::BytesSent, wire.size());
  }
}

// Waits for segments [k0, k1) of the incoming chunk, checks their lengths, opens them (one batch) and,
// in scatter-reduce, adds them in.
void RingAllreduce::finish_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int prev = (rank_ + size_ - 1) % size_;
  const RingRange in = geo_.chunk(h.recv_chunk);
  const bool pass = channel_->pass_through();
  const bool reduce = h.phase == MessagePhase::ScatterReduce;
  open_jobs_.clear();
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    const std::size_t plain_bytes = seg.count * sizeof(float);
    const MessageContext ctx = geo_.context(h, h.recv_chunk, k, prev, rank_, plain_bytes);
    const std::size_t got = wait(recvs_[k], ctx);
    count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
    check_length(got, plain_bytes + (pass ? 0 : channel_->overhead()), prev, ctx);
    if (pass) {
      channel_->charge_open(ctx, plain_bytes);
      continue;
    }
    // Scatter-reduce opens into scratch (then adds); all-gather opens straight into user memory.
    float* plain = reduce ? reduce_slot(in, k) : data + seg.offset;
    open_jobs_.push_back({ctx, std::span<const std::byte>(scratch_.wire_in).subspan(geo_.wire_offset(k), got),
                          bytes_of(plain, seg.count)});
  }
  if (!open_jobs_.empty()) channel_->open_batch(open_jobs_);  // throws naming the context on failure
  if (!reduce) return;
  {
    ScopedPhase timer(prof_, Phase::Reduce, Lane::Comm);
    for (std::size_t k = k0; k < k1; ++k) {
      const RingRange seg = geo_.segment(in, k);
      memory_->add_into(data + seg.offset, reduce_slot(in, k), seg.count);
    }
  }
  // Fused: the last scatter-reduce hop finished these segments of our chunk; they open the all-gather.
  if (eager_ && h.index + 2 == static_cast<std::uint32_t>(size_))
    send_segments(data, geo_.all_gather_hop(0), k0, k1, early_sends_);
  // Slots: the ones just added in are free for the segments `reduce_slots_` further on.
  if (reduce_slots_ > 0)
    post_receives(data, h, std::min(k0 + reduce_slots_, geo_.segments(in)),
                  std::min(k1 + reduce_slots_, geo_.segments(in)));
}

void RingAllreduce::check_length(std::size_t got, std::size_t expected, int prev,
                                 const MessageContext& ctx) const {
  if (got == expected) return;
  const std::string what = ring_name(*memory_) + ": rank " + std::to_string(rank_) +
                           " got a short message from rank " + std::to_string(prev) + " (" +
                           std::to_string(got) + " of " + std::to_string(expected) + " bytes) at " +
                           to_string(ctx);
  // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
  if (!channel_->pass_through()) throw IntegrityError(what);
  throw RunError(what);
}

// Waits with the ring's timeout and turns a transport failure into one line naming the message.
std::size_t RingAllreduce::wait(Request& r, const MessageContext& ctx) {
  try {
    return opt_.timeout.count() > 0 ? t_.wait(r, opt_.timeout) : t_.wait(r);
  } catch (const RunError& e) {
    throw RunError(ring_name(*memory_) + " on rank " + std::to_string(rank_) + " failed at " +
                   to_string(ctx) + ": " + e.what());
  }
}

}  // namespace tt::comm
