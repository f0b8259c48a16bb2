#include "comm/hop_runner.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace tt::comm {

namespace {

// Plaintext reduce receives land in slots of this many bytes in all (see begin()).
constexpr std::size_t kReduceSlotBytes = std::size_t{1} << 20;

std::span<std::byte> bytes_of(float* p, std::size_t n) {
  return {reinterpret_cast<std::byte*>(p), n * sizeof(float)};
}

void count(Profiler* prof, Counter messages, Counter bytes, std::size_t n) {
  if (prof == nullptr) return;
  prof->add(messages, 1);
  prof->add(bytes, static_cast<int64_t>(n));
}

}  // namespace

void check_channel_memory(const std::string& algorithm, const Channel& channel, const RingMemory& memory) {
  if (channel.pass_through() || channel.memory() == memory.space()) return;
  throw InputError(algorithm + ": channel " + channel.name() + " seals " +
                   memory_space_name(channel.memory()) + " memory but the buffers are in " +
                   memory_space_name(memory.space()) + " memory");
}

HopRunner::HopRunner(Transport& transport, Channel& channel, RingMemory& memory, Profiler* profiler)
    : t_(transport), channel_(&channel), memory_(&memory), prof_(profiler) {}

void HopRunner::begin(const std::string& name, const SegmentLayout& layout, std::size_t max_range,
                      const MessageContext& id, std::chrono::milliseconds timeout, int tag) {
  name_ = &name;
  rank_ = t_.rank();
  layout_ = layout;
  id_ = id;
  timeout_ = timeout;
  tag_ = tag;
  const bool pass = channel_->pass_through();
  // Plaintext reduce receives cycle through a few segment-sized slots instead of a whole range of
  // scratch: a slot is added in right after it lands, while it is still in cache, and the scratch
  // stays small enough to stay there (a range-sized one streams through memory at 16 MiB).
  const std::size_t segs = layout_.segments(RingRange{0, max_range});
  schedule_ = send_schedule(*channel_, *memory_);
  eager_ = schedule_ == SendSchedule::Eager;
  host_sums_ = pass && memory_->adds_on_host();
  reduce_slots_ = 0;
  if (eager_ && segs > 2) {
    reduce_slots_ =
        std::clamp<std::size_t>(kReduceSlotBytes / (layout_.segment_elems() * sizeof(float)), 2, segs);
  }
  const std::size_t reduce_floats = reduce_slots_ > 0 ? reduce_slots_ * layout_.segment_elems() : max_range;
  scratch_ = memory_->scratch(reduce_floats, pass ? 0 : layout_.wire_bytes(max_range));
  early_sends_.clear();
  presend_ = false;
}

// True when `h` asks to be fused and `next` sends exactly the range `h` reduces: those segments are
// posted one by one as `h` adds them in (still in cache, and without waiting for the hop's end). Only
// timing changes, never a byte or a context: each segment is final once added.
bool HopRunner::fuses(const Hop& h, const Hop* next) const {
  return eager_ && h.fuse && next != nullptr && h.reduce && h.recv.active() && next->send.active() &&
         next->send.range.offset == h.recv.range.offset && next->send.range.count == h.recv.range.count;
}

// The hop sends the range it receives into (recursive doubling's exchange): its send reads the memory
// its adds write. Every algorithm's two ranges of a hop are the same or disjoint.
bool HopRunner::sends_what_it_adds(const Hop& h) {
  return h.send.active() && h.recv.active() && h.send.range.offset == h.recv.range.offset;
}

// Where segment k of incoming range `in` lands in the reduce scratch.
float* HopRunner::reduce_slot(const RingRange& in, std::size_t k) const {
  if (reduce_slots_ == 0) return scratch_.reduce + (layout_.segment(in, k).offset - in.offset);
  return scratch_.reduce + (k % reduce_slots_) * layout_.segment_elems();
}

void HopRunner::run(float* data, const Hop& h, const Hop* next) {
  const std::size_t n_in = h.recv.active() ? layout_.segments(h.recv.range) : 0;
  const std::size_t n_out = h.send.active() ? layout_.segments(h.send.range) : 0;
  const bool windowed = schedule_ == SendSchedule::Windowed;
  const bool presend = std::exchange(presend_, false);
  fuse_ = fuses(h, next);
  next_ = next;
  // Note [Shared buffers] (shm_transport.h): plaintext host adds happen on receipt, in the transport,
  // where the buffer is shared: every rank's caller makes the same choice, so the peer's bytes can be
  // added from where they lie. Not where this hop's send reads the range they write (recursive
  // doubling's exchange). Elsewhere the adds stay here, from the slots, timed as the reduce phase.
  summing_ = host_sums_ && h.reduce && h.recv.active() && !sends_what_it_adds(h) &&
             t_.sums_on_receive(h.recv.peer) &&
             t_.shared(data + h.recv.range.offset, h.recv.range.count * sizeof(float));
  sends_.clear();
  recvs_.clear();
  // Post every receive of the hop first, unless the memory's transport needs matched windows; then,
  // when nothing has to be sealed first, every send: the peer pulls our segments at its own pace while
  // we pull and add its segments (no lock-step between the two).
  const bool slotted = reduce_slots_ > 0 && h.reduce && !summing_;
  if (!windowed) post_receives(data, h, 0, slotted ? std::min(n_in, reduce_slots_) : n_in);
  if (presend) {
    std::swap(sends_, early_sends_);  // sent segment by segment as the previous hop added them
  } else if (eager_) {
    send_segments(data, h, 0, n_out, sends_);
  }
  early_sends_.clear();
  // Pipeline, in windows of w segments (w = the channel's crypto parallelism, 1 by default): our
  // segments [k, k+w) are sealed and go out, then the peer's segments [k, k+w) are finished. Every
  // rank forms the same windows.
  const std::size_t w = std::max<std::size_t>(channel_->parallelism(), 1);
  for (std::size_t k = 0; k < std::max(n_in, n_out); k += w) {
    if (windowed && k < n_in) post_receives(data, h, k, std::min(n_in, k + w));
    if (!eager_ && k < n_out) send_segments(data, h, k, std::min(n_out, k + w), sends_);
    if (k < n_in) {
      finish_receives(data, h, k, std::min(n_in, k + w));
    } else if (windowed && !sends_.empty()) {
      (void)t_.test(sends_.back());  // a window with sends only: push them out now (NCCL group)
    }
  }
  // Sends must complete before their memory (user data or the wire scratch) is touched by the next hop.
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    if (sends_[k].done()) continue;
    wait(sends_[k],
         context(h, h.send, k, rank_, h.send.peer, layout_.segment(h.send.range, k).count * sizeof(float)));
  }
  // The adds of this hop must finish before the next hop sends the reduced range and reuses the scratch.
  memory_->wait_queued();
  // Forward-wire: the ciphertext received in this hop is exactly what we send in the next one.
  if (h.forwarded && !channel_->pass_through()) std::swap(scratch_.wire_in, scratch_.wire_out);
  presend_ = fuse_;
}

void HopRunner::run_all(float* data, std::span<const Hop> hops) {
  for (std::size_t i = 0; i < hops.size(); ++i)
    run(data, hops[i], i + 1 < hops.size() ? &hops[i + 1] : nullptr);
}

// Posts the receives of segments [k0, k1) of the incoming range.
void HopRunner::post_receives(float* data, const Hop& h, std::size_t k0, std::size_t k1) {
  const RingRange in = h.recv.range;
  const bool pass = channel_->pass_through();
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = layout_.segment(in, k);
    if (summing_) {
      recvs_.push_back(t_.irecv_sum(h.recv.peer, std::span(data + seg.offset, seg.count), tag_));
      continue;
    }
    std::span<std::byte> dst;
    if (!pass) {
      dst =
          scratch_.wire_in.subspan(layout_.wire_offset(k), seg.count * sizeof(float) + channel_->overhead());
    } else if (h.reduce) {
      dst = bytes_of(reduce_slot(in, k), seg.count);
    } else {
      dst = bytes_of(data + seg.offset, seg.count);  // a gather lands in user memory: zero copies
    }
    recvs_.push_back(t_.irecv(h.recv.peer, dst, tag_));
  }
}

// Seals segments [k0, k1) of the outgoing range (one batch) and posts their sends, appended to `sent`.
void HopRunner::send_segments(float* data, const Hop& h, std::size_t k0, std::size_t k1,
                              std::vector<Request>& sent) {
  const int to = h.send.peer;
  const RingRange out = h.send.range;
  const bool pass = channel_->pass_through();
  seal_jobs_.clear();
  for (std::size_t k = k0; k < k1 && !pass && h.reseal; ++k) {
    const RingRange seg = layout_.segment(out, k);
    const auto plain = bytes_of(data + seg.offset, seg.count);
    seal_jobs_.push_back(
        {context(h, h.send, k, rank_, to, plain.size()), plain,
         scratch_.wire_out.subspan(layout_.wire_offset(k), plain.size() + channel_->overhead())});
  }
  if (!seal_jobs_.empty()) channel_->seal_batch(seal_jobs_);  // blocking: wire bytes complete on return
  for (std::size_t k = k0; k < k1 && pass; ++k) {
    const std::size_t bytes = layout_.segment(out, k).count * sizeof(float);
    channel_->charge_seal(context(h, h.send, k, rank_, to, bytes), bytes);
  }
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = layout_.segment(out, k);
    std::span<const std::byte> wire = bytes_of(data + seg.offset, seg.count);  // pass-through: user memory
    if (!pass) wire = scratch_.wire_out.subspan(layout_.wire_offset(k), wire.size() + channel_->overhead());
    sent.push_back(t_.isend(to, wire, tag_));
    count(prof_, Counter::MessagesSent, Counter::BytesSent, wire.size());
  }
}

// Waits for segments [k0, k1) of the incoming range, checks their lengths, opens them (one batch) and,
// in a reduce hop, adds them in.
void HopRunner::finish_receives(float* data, const Hop& h, std::size_t k0, std::size_t k1) {
  const int from = h.recv.peer;
  const RingRange in = h.recv.range;
  const bool pass = channel_->pass_through();
  open_jobs_.clear();
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = layout_.segment(in, k);
    const std::size_t plain_bytes = seg.count * sizeof(float);
    const MessageContext ctx = context(h, h.recv, k, from, rank_, plain_bytes);
    const std::size_t got = wait(recvs_[k], ctx);
    count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
    check_length(got, plain_bytes + (pass ? 0 : channel_->overhead()), from, ctx);
    if (pass) {
      channel_->charge_open(ctx, plain_bytes);
      continue;
    }
    // A reduce hop opens into scratch (then adds); a gather opens straight into user memory.
    float* plain = h.reduce ? reduce_slot(in, k) : data + seg.offset;
    open_jobs_.push_back({ctx,
                          std::span<const std::byte>(scratch_.wire_in).subspan(layout_.wire_offset(k), got),
                          bytes_of(plain, seg.count)});
  }
  if (!open_jobs_.empty()) channel_->open_batch(open_jobs_);  // throws naming the context on failure
  if (!h.reduce) return;
  add_segments(data, h, k0, k1);
  // Slots: the ones just added in are free for the segments `reduce_slots_` further on.
  if (reduce_slots_ > 0 && !summing_)
    post_receives(data, h, std::min(k0 + reduce_slots_, layout_.segments(in)),
                  std::min(k1 + reduce_slots_, layout_.segments(in)));
}

// Adds received segments [k0, k1) into the buffer; fused, sends each as the next hop's at once.
void HopRunner::add_segments(float* data, const Hop& h, std::size_t k0, std::size_t k1) {
  const RingRange in = h.recv.range;
  // Sending and adding the same memory (recursive doubling): our send of a segment must be done
  // reading it before the add writes it. Sealed sends read the wire scratch, never the buffer.
  const bool same = sends_what_it_adds(h) && channel_->pass_through();
  for (std::size_t k = k0; k < k1 && same && k < sends_.size(); ++k) {
    wait(sends_[k],
         context(h, h.send, k, rank_, h.send.peer, layout_.segment(h.send.range, k).count * sizeof(float)));
  }
  if (!summing_) {  // summed on receipt: nothing to add here
    ScopedPhase timer(prof_, Phase::Reduce, Lane::Comm);
    for (std::size_t k = k0; k < k1; ++k) {
      const RingRange seg = layout_.segment(in, k);
      memory_->add_into(data + seg.offset, reduce_slot(in, k), seg.count);
    }
  }
  if (fuse_) send_segments(data, *next_, k0, k1, early_sends_);  // `next` sends exactly these segments
}

MessageContext HopRunner::context(const Hop& h, const HopSide& side, std::size_t seg, int sender,
                                  int receiver, std::size_t bytes) const {
  MessageContext c = id_;
  c.phase = h.phase;
  c.hop = h.index;
  c.chunk = side.block;
  c.segment = static_cast<std::uint32_t>(seg);
  c.length = bytes;
  c.origin = side.origin;
  c.sender = sender;
  c.receiver = receiver;
  if (h.forwarded) {
    // One sealed object travels every link unchanged: it belongs to its origin, not to a hop.
    c.hop = 0;
    c.sender = side.origin;
    c.receiver = kAnyRank;
  }
  return c;
}

void HopRunner::check_length(std::size_t got, std::size_t expected, int peer,
                             const MessageContext& ctx) const {
  if (got == expected) return;
  const std::string what = *name_ + ": rank " + std::to_string(rank_) + " got a short message from rank " +
                           std::to_string(peer) + " (" + std::to_string(got) + " of " +
                           std::to_string(expected) + " bytes) at " + to_string(ctx);
  // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
  if (!channel_->pass_through()) throw IntegrityError(what);
  throw RunError(what);
}

// Waits with the call's timeout and turns a transport failure into one line naming the message.
std::size_t HopRunner::wait(Request& r, const MessageContext& ctx) {
  try {
    return timeout_.count() > 0 ? t_.wait(r, timeout_) : t_.wait(r);
  } catch (const RunError& e) {
    throw RunError(*name_ + " on rank " + std::to_string(rank_) + " failed at " + to_string(ctx) + ": " +
                   e.what());
  }
}

}  // namespace tt::comm
