#include "comm/allreduce/hop_runner.h"

#include <algorithm>
#include <exception>
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

const char* collective_label(Collective c) {
  switch (c) {
    case Collective::Allreduce:
      return "allreduce";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::AllGather:
      return "all-gather";
  }
  return "?";
}

void check_channel_memory(const std::string& algorithm, const Channel& channel, const ReduceMemory& memory) {
  if (channel.pass_through() || channel.memory() == memory.space()) return;
  throw InputError(algorithm + ": channel " + channel.name() + " seals " +
                   memory_space_name(channel.memory()) + " memory but the buffers are in " +
                   memory_space_name(memory.space()) + " memory");
}

HopRunner::HopRunner(Transport& transport, Channel& channel, ReduceMemory& memory, Profiler* profiler)
    : t_(transport), channel_(&channel), memory_(&memory), prof_(profiler) {}

void HopRunner::begin(const std::string& name, const SegmentLayout& layout, std::size_t max_range,
                      const MessageContext& id, std::chrono::milliseconds timeout, int tag) {
  const bool pass = channel_->pass_through();
  Call call;
  call.name = &name;
  call.rank = t_.rank();
  call.layout = layout;
  call.id = id;
  call.timeout = timeout;
  call.tag = tag;
  call.schedule = send_schedule(*channel_, *memory_);
  call.eager = call.schedule == SendSchedule::Eager;
  call.host_sums = pass && memory_->adds_on_host();
  // Plaintext reduce receives cycle through a few segment-sized slots instead of a whole range of
  // scratch: a slot is added in right after it lands, while it is still in cache, and the scratch
  // stays small enough to stay there (a range-sized one streams through memory at 16 MiB).
  const std::size_t segs = layout.segments(ElemRange{0, max_range});
  if (call.eager && segs > 2) {
    call.reduce_slots =
        std::clamp<std::size_t>(kReduceSlotBytes / (layout.segment_elems() * sizeof(float)), 2, segs);
  }
  const std::size_t reduce_floats =
      call.reduce_slots > 0 ? call.reduce_slots * layout.segment_elems() : max_range;
  call.scratch = memory_->scratch(reduce_floats, pass ? 0 : layout.wire_bytes(max_range));
  call_ = call;
  early_sends_.clear();
}

// True when `h` asks to be fused and `next` sends exactly the range `h` reduces: those segments are
// posted one by one as `h` adds them in (still in cache, and without waiting for the hop's end). Only
// timing changes, never a byte or a context: each segment is final once added.
bool HopRunner::fuses(const Hop& h, const Hop* next) const {
  return call_.eager && h.fuse && next != nullptr && h.reduce && h.recv.active() && next->send.active() &&
         next->send.range.offset == h.recv.range.offset && next->send.range.count == h.recv.range.count;
}

// The hop sends the range it receives into (recursive doubling's exchange): its send reads the memory
// its adds write. Every algorithm's two ranges of a hop are the same or disjoint.
bool HopRunner::sends_what_it_adds(const Hop& h) {
  return h.send.active() && h.recv.active() && h.send.range.offset == h.recv.range.offset;
}

// Where segment k of incoming range `in` lands in the reduce scratch.
float* HopRunner::reduce_slot(const ElemRange& in, std::size_t k) const {
  if (call_.reduce_slots == 0) return call_.scratch.reduce + (call_.layout.segment(in, k).offset - in.offset);
  return call_.scratch.reduce + (k % call_.reduce_slots) * call_.layout.segment_elems();
}

// Note [Shared buffers] (shm_transport.h): plaintext host adds happen on receipt, in the transport,
// where the buffer is shared: every rank's caller makes the same choice, so the peer's bytes can be
// added from where they lie. Not where this hop's send reads the range they write (recursive
// doubling's exchange). Elsewhere the adds stay here, from the slots, timed as the reduce phase.
HopRunner::HopMode HopRunner::mode_of(float* data, const Hop& h, const Hop* next) const {
  HopMode m;
  if (fuses(h, next)) m.fuse_into = next;
  m.summing = call_.host_sums && h.reduce && h.recv.active() && !sends_what_it_adds(h) &&
              t_.sums_on_receive(h.recv.peer) &&
              t_.shared(data + h.recv.range.offset, h.recv.range.count * sizeof(float));
  return m;
}

void HopRunner::run(float* data, const Hop& h, const Hop* next) {
  // Note [Withdrawn sends] (comm/transport/shm_transport.cpp): a hop that fails drops its pending
  // requests before the exception leaves, while the memory they read is alive and unchanged.
  struct DropOnThrow {
    HopRunner& runner;
    int unwinding = std::uncaught_exceptions();
    ~DropOnThrow() {
      if (std::uncaught_exceptions() > unwinding) runner.drop_requests();
    }
  } drop_on_throw{*this};
  const SegmentLayout& layout = call_.layout;
  const std::size_t n_in = h.recv.active() ? layout.segments(h.recv.range) : 0;
  const std::size_t n_out = h.send.active() ? layout.segments(h.send.range) : 0;
  const bool windowed = call_.schedule == SendSchedule::Windowed;
  const bool presend = std::exchange(call_.presend, false);
  const HopMode m = mode_of(data, h, next);
  sends_.clear();
  recvs_.clear();
  // Post every receive of the hop first, unless the memory's transport needs matched windows; then,
  // when nothing has to be sealed first, every send: the peer pulls our segments at its own pace while
  // we pull and add its segments (no lock-step between the two).
  const bool slotted = call_.reduce_slots > 0 && h.reduce && !m.summing;
  if (!windowed) post_receives(data, h, m, 0, slotted ? std::min(n_in, call_.reduce_slots) : n_in);
  if (presend) {
    std::swap(sends_, early_sends_);  // sent segment by segment as the previous hop added them
  } else if (call_.eager) {
    send_segments(data, h, 0, n_out, sends_);
  }
  early_sends_.clear();
  // Pipeline, in windows of w segments (w = the channel's crypto parallelism, 1 by default): our
  // segments [k, k+w) are sealed and go out, then the peer's segments [k, k+w) are finished. Every
  // rank forms the same windows.
  const std::size_t w = std::max<std::size_t>(channel_->parallelism(), 1);
  for (std::size_t k = 0; k < std::max(n_in, n_out); k += w) {
    if (windowed && k < n_in) post_receives(data, h, m, k, std::min(n_in, k + w));
    if (!call_.eager && k < n_out) send_segments(data, h, k, std::min(n_out, k + w), sends_);
    if (k < n_in) {
      finish_receives(data, h, m, k, std::min(n_in, k + w));
    } else if (windowed && !sends_.empty()) {
      (void)t_.test(sends_.back());  // a window with sends only: push them out now (NCCL group)
    }
  }
  // Sends must complete before their memory (user data or the wire scratch) is touched by the next hop.
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    if (sends_[k].done()) continue;
    wait(sends_[k], context(h, h.send, k, call_.rank, h.send.peer,
                            layout.segment(h.send.range, k).count * sizeof(float)));
  }
  // The adds of this hop must finish before the next hop sends the reduced range and reuses the scratch.
  memory_->wait_queued();
  // Forward-wire: the ciphertext received in this hop is exactly what we send in the next one.
  if (h.forwarded && !channel_->pass_through()) std::swap(call_.scratch.wire_in, call_.scratch.wire_out);
  call_.presend = m.fuse_into != nullptr;
}

void HopRunner::run_all(float* data, std::span<const Hop> hops) {
  for (std::size_t i = 0; i < hops.size(); ++i)
    run(data, hops[i], i + 1 < hops.size() ? &hops[i + 1] : nullptr);
}

void HopRunner::run_plan(const PlanKey& key, const std::function<std::vector<Hop>()>& make, float* data,
                         const MessageContext& id, const PlanCall& call) {
  const auto start = prof_ != nullptr ? prof_->now() : Profiler::Clock::now();
  auto [it, fresh] = plans_.try_emplace(key);
  HopPlan& plan = it->second;
  if (fresh) {
    plan.hops = make();
    for (const Hop& h : plan.hops)
      plan.widest = std::max({plan.widest, h.send.range.count, h.recv.range.count});
  }
  begin(*call.name, SegmentLayout(call.segment_bytes, plan.widest, channel_->overhead()), plan.widest, id,
        call.timeout, call.tag);
  memory_->wait_queued();
  run_all(data, plan.hops);
  if (prof_ != nullptr && prof_->tracing())
    prof_->record(collective_label(key.what), Lane::Comm, start, prof_->now());
}

// Posts the receives of segments [k0, k1) of the incoming range.
void HopRunner::post_receives(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1) {
  const ElemRange in = h.recv.range;
  const bool pass = channel_->pass_through();
  for (std::size_t k = k0; k < k1; ++k) {
    const ElemRange seg = call_.layout.segment(in, k);
    if (m.summing) {
      recvs_.push_back(t_.irecv_sum(h.recv.peer, std::span(data + seg.offset, seg.count), call_.tag));
      continue;
    }
    std::span<std::byte> dst;
    if (!pass) {
      dst = call_.scratch.wire_in.subspan(call_.layout.wire_offset(k),
                                          seg.count * sizeof(float) + channel_->overhead());
    } else if (h.reduce) {
      dst = bytes_of(reduce_slot(in, k), seg.count);
    } else {
      dst = bytes_of(data + seg.offset, seg.count);  // a gather lands in user memory: zero copies
    }
    recvs_.push_back(t_.irecv(h.recv.peer, dst, call_.tag));
  }
}

// Seals segments [k0, k1) of the outgoing range (one batch) and posts their sends, appended to `sent`.
void HopRunner::send_segments(float* data, const Hop& h, std::size_t k0, std::size_t k1,
                              std::vector<Request>& sent) {
  const int to = h.send.peer;
  const ElemRange out = h.send.range;
  const bool pass = channel_->pass_through();
  seal_jobs_.clear();
  for (std::size_t k = k0; k < k1 && !pass && h.reseal; ++k) {
    const ElemRange seg = call_.layout.segment(out, k);
    const auto plain = bytes_of(data + seg.offset, seg.count);
    seal_jobs_.push_back(
        {context(h, h.send, k, call_.rank, to, plain.size()), plain,
         call_.scratch.wire_out.subspan(call_.layout.wire_offset(k), plain.size() + channel_->overhead())});
  }
  if (!seal_jobs_.empty()) channel_->seal_batch(seal_jobs_);  // blocking: wire bytes complete on return
  for (std::size_t k = k0; k < k1 && pass; ++k) {
    const std::size_t bytes = call_.layout.segment(out, k).count * sizeof(float);
    channel_->charge_seal(context(h, h.send, k, call_.rank, to, bytes), bytes);
  }
  for (std::size_t k = k0; k < k1; ++k) {
    const ElemRange seg = call_.layout.segment(out, k);
    std::span<const std::byte> wire = bytes_of(data + seg.offset, seg.count);  // pass-through: user memory
    if (!pass)
      wire = call_.scratch.wire_out.subspan(call_.layout.wire_offset(k), wire.size() + channel_->overhead());
    sent.push_back(t_.isend(to, wire, call_.tag));
    count(prof_, Counter::MessagesSent, Counter::BytesSent, wire.size());
  }
}

// Waits for segments [k0, k1) of the incoming range, checks their lengths, opens them (one batch) and,
// in a reduce hop, adds them in.
void HopRunner::finish_receives(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1) {
  const int from = h.recv.peer;
  const ElemRange in = h.recv.range;
  const bool pass = channel_->pass_through();
  open_jobs_.clear();
  for (std::size_t k = k0; k < k1; ++k) {
    const ElemRange seg = call_.layout.segment(in, k);
    const std::size_t plain_bytes = seg.count * sizeof(float);
    const MessageContext ctx = context(h, h.recv, k, from, call_.rank, plain_bytes);
    const std::size_t got = wait(recvs_[k], ctx);
    count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
    check_length(got, plain_bytes + (pass ? 0 : channel_->overhead()), from, ctx);
    if (pass) {
      channel_->charge_open(ctx, plain_bytes);
      continue;
    }
    // A reduce hop opens into scratch (then adds); a gather opens straight into user memory.
    float* plain = h.reduce ? reduce_slot(in, k) : data + seg.offset;
    open_jobs_.push_back(
        {ctx, std::span<const std::byte>(call_.scratch.wire_in).subspan(call_.layout.wire_offset(k), got),
         bytes_of(plain, seg.count)});
  }
  if (!open_jobs_.empty()) channel_->open_batch(open_jobs_);  // throws naming the context on failure
  if (!h.reduce) return;
  add_segments(data, h, m, k0, k1);
  // Slots: the ones just added in are free for the segments `reduce_slots` further on.
  const std::size_t slots = call_.reduce_slots;
  if (slots > 0 && !m.summing)
    post_receives(data, h, m, std::min(k0 + slots, call_.layout.segments(in)),
                  std::min(k1 + slots, call_.layout.segments(in)));
}

// Adds received segments [k0, k1) into the buffer; fused, sends each as the next hop's at once.
void HopRunner::add_segments(float* data, const Hop& h, const HopMode& m, std::size_t k0, std::size_t k1) {
  const ElemRange in = h.recv.range;
  // Sending and adding the same memory (recursive doubling): our send of a segment must be done
  // reading it before the add writes it. Sealed sends read the wire scratch, never the buffer.
  const bool same = sends_what_it_adds(h) && channel_->pass_through();
  for (std::size_t k = k0; k < k1 && same && k < sends_.size(); ++k) {
    wait(sends_[k], context(h, h.send, k, call_.rank, h.send.peer,
                            call_.layout.segment(h.send.range, k).count * sizeof(float)));
  }
  if (!m.summing) {  // summed on receipt: nothing to add here
    ScopedPhase timer(prof_, Phase::Reduce, Lane::Comm);
    for (std::size_t k = k0; k < k1; ++k) {
      const ElemRange seg = call_.layout.segment(in, k);
      memory_->add_into(data + seg.offset, reduce_slot(in, k), seg.count);
    }
  }
  // The next hop sends exactly these segments.
  if (m.fuse_into != nullptr) send_segments(data, *m.fuse_into, k0, k1, early_sends_);
}

MessageContext HopRunner::context(const Hop& h, const HopSide& side, std::size_t seg, int sender,
                                  int receiver, std::size_t bytes) const {
  MessageContext c = call_.id;
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
    c.group = h.group;
  }
  return c;
}

void HopRunner::check_length(std::size_t got, std::size_t expected, int peer,
                             const MessageContext& ctx) const {
  if (got == expected) return;
  const std::string what = *call_.name + ": rank " + std::to_string(call_.rank) +
                           " got a short message from rank " + std::to_string(peer) + " (" +
                           std::to_string(got) + " of " + std::to_string(expected) + " bytes) at " +
                           to_string(ctx);
  // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
  if (!channel_->pass_through()) throw IntegrityError(what);
  throw RunError(what);
}

void HopRunner::drop_requests() {
  sends_.clear();
  early_sends_.clear();
  recvs_.clear();
}

// Waits with the call's timeout and turns a transport failure into one line naming the message.
std::size_t HopRunner::wait(Request& r, const MessageContext& ctx) {
  try {
    return call_.timeout.count() > 0 ? t_.wait(r, call_.timeout) : t_.wait(r);
  } catch (const RunError& e) {
    // Note [Sizes before receives]: a message longer than a sealed one's place is an attack signal, as
    // a short one is (check_length).
    throw_wait_failure(e,
                       *call_.name + " on rank " + std::to_string(call_.rank) + " failed at " +
                           to_string(ctx) + ": " + e.what(),
                       !channel_->pass_through());
  }
}

}  // namespace tt::comm
