#include "comm/ring_allreduce.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "tee/errors.h"

namespace tt::comm {

namespace {

std::span<std::byte> bytes_of(float* p, std::size_t n) {
  return std::as_writable_bytes(std::span<float>(p, n));
}

// dst[i] += src[i]. Plain host loop; the compiler vectorises it.
void add_into(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

void count(Profiler* prof, Counter messages, Counter bytes, std::size_t n) {
  if (prof == nullptr) return;
  prof->add(messages, 1);
  prof->add(bytes, static_cast<int64_t>(n));
}

}  // namespace

const char* all_gather_mode_name(AllGatherMode m) {
  return m == AllGatherMode::PerHop ? "per_hop" : "forward_wire";
}

RingAllreduce::RingAllreduce(Transport& transport, RingOptions options, Profiler* profiler)
    : t_(transport), channel_(&plain_), opt_(options), prof_(profiler) {}

RingAllreduce::RingAllreduce(Transport& transport, Channel& channel, RingOptions options, Profiler* profiler)
    : t_(transport), channel_(&channel), opt_(options), prof_(profiler) {}

std::size_t RingAllreduce::scratch_bytes() const {
  return reduce_buf_.size() * sizeof(float) + wire_out_.size() + wire_in_.size();
}

void RingAllreduce::prepare(std::size_t count, const MessageContext& id) {
  rank_ = t_.rank();
  size_ = t_.size();
  const bool pass = channel_->pass_through();
  geo_ = RingGeometry(rank_, size_, count, opt_.segment_bytes, id,
                      !pass && opt_.all_gather == AllGatherMode::ForwardWire, channel_->overhead());
  // Grow once; later calls with smaller buckets reuse the memory.
  const std::size_t max_chunk = geo_.max_chunk();
  if (reduce_buf_.size() < max_chunk) reduce_buf_.resize(max_chunk);
  if (!pass) {
    const std::size_t wire = geo_.wire_bytes();
    if (wire_out_.size() < wire) wire_out_.resize(wire);
    if (wire_in_.size() < wire) wire_in_.resize(wire);
  }
}

void RingAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id) {
  if (t_.size() == 1 || count == 0) return;
  if (data == nullptr) throw RunError("ring all-reduce: null buffer");
  const auto begin = Profiler::Clock::now();
  prepare(count, id);
  const auto p = static_cast<std::uint32_t>(size_);
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.all_gather_hop(s));
  if (prof_ != nullptr && prof_->tracing())
    prof_->record("allreduce", Lane::Comm, begin, Profiler::Clock::now());
}

void RingAllreduce::run_hop(float* data, const RingHop& h) {
  const bool pass = channel_->pass_through();
  const bool reduce = h.phase == MessagePhase::ScatterReduce;
  const int prev = (rank_ + size_ - 1) % size_;
  const RingRange in = geo_.chunk(h.recv_chunk);
  const std::size_t n_in = geo_.segments(in);
  const std::size_t n_out = geo_.segments(geo_.chunk(h.send_chunk));
  sends_.clear();
  recvs_.clear();

  // 1. Post every receive of the hop: the left neighbour may run ahead without unexpected-message copies.
  for (std::size_t k = 0; k < n_in; ++k) {
    const RingRange seg = geo_.segment(in, k);
    std::span<std::byte> dst;
    if (!pass) {
      dst =
          std::span(wire_in_).subspan(geo_.wire_offset(k), seg.count * sizeof(float) + channel_->overhead());
    } else if (reduce) {
      dst = bytes_of(reduce_buf_.data() + (seg.offset - in.offset), seg.count);
    } else {
      dst = bytes_of(data + seg.offset, seg.count);  // all-gather lands in user memory: zero copies
    }
    recvs_.push_back(t_.irecv(prev, dst, opt_.tag));
  }
  // 2. Pipeline, in windows of w segments (w = the channel's crypto parallelism, 1 by default): our
  //    segments [k, k+w) go out, then the neighbour's segments [k, k+w) are finished.
  const std::size_t w = std::max<std::size_t>(channel_->parallelism(), 1);
  for (std::size_t k = 0; k < std::max(n_in, n_out); k += w) {
    if (k < n_out) send_segments(data, h, k, std::min(n_out, k + w));
    if (k < n_in) finish_receives(data, h, k, std::min(n_in, k + w));
  }
  // 3. Sends must complete before their memory (user data or wire_out_) is touched by the next hop.
  const int next = (rank_ + 1) % size_;
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    wait(sends_[k], geo_.context(h, h.send_chunk, k, rank_, next,
                                 geo_.segment(geo_.chunk(h.send_chunk), k).count * sizeof(float)));
  }
  // Forward-wire: the ciphertext received in this hop is exactly what we send in the next one.
  if (geo_.forwarding(h)) std::swap(wire_in_, wire_out_);
}

// Seals segments [k0, k1) of the outgoing chunk (one batch) and posts their sends.
void RingAllreduce::send_segments(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int next = (rank_ + 1) % size_;
  const RingRange out = geo_.chunk(h.send_chunk);
  const bool pass = channel_->pass_through();
  // Forward-wire hops after the first resend the owner's sealed bytes, already in wire_out_.
  const bool reseal = !pass && !(geo_.forwarding(h) && h.index > 0);
  seal_jobs_.clear();
  for (std::size_t k = k0; k < k1 && reseal; ++k) {
    const RingRange seg = geo_.segment(out, k);
    const auto plain = bytes_of(data + seg.offset, seg.count);
    seal_jobs_.push_back(
        {geo_.context(h, h.send_chunk, k, rank_, next, plain.size()), plain,
         std::span(wire_out_).subspan(geo_.wire_offset(k), plain.size() + channel_->overhead())});
  }
  if (!seal_jobs_.empty()) channel_->seal_batch(seal_jobs_);
  for (std::size_t k = k0; k < k1 && pass; ++k) {
    const std::size_t bytes = geo_.segment(out, k).count * sizeof(float);
    channel_->charge_seal(geo_.context(h, h.send_chunk, k, rank_, next, bytes), bytes);
  }
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(out, k);
    std::span<const std::byte> wire = bytes_of(data + seg.offset, seg.count);  // pass-through: user memory
    if (!pass) wire = std::span(wire_out_).subspan(geo_.wire_offset(k), wire.size() + channel_->overhead());
    sends_.push_back(t_.isend(next, wire, opt_.tag));
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
    const std::size_t expected = plain_bytes + (pass ? 0 : channel_->overhead());
    const std::size_t got = wait(recvs_[k], ctx);
    count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
    if (got != expected) {
      const std::string what = "ring all-reduce: rank " + std::to_string(rank_) +
                               " got a short message from rank " + std::to_string(prev) + " (" +
                               std::to_string(got) + " of " + std::to_string(expected) + " bytes) at " +
                               to_string(ctx);
      // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
      if (!pass) throw tee::IntegrityError(what);
      throw RunError(what);
    }
    if (pass) channel_->charge_open(ctx, plain_bytes);
    if (!pass) {
      // Scatter-reduce opens into scratch (then adds); all-gather opens straight into user memory.
      float* plain = reduce ? reduce_buf_.data() + (seg.offset - in.offset) : data + seg.offset;
      open_jobs_.push_back({ctx, std::span<const std::byte>(wire_in_).subspan(geo_.wire_offset(k), got),
                            bytes_of(plain, seg.count)});
    }
  }
  if (!open_jobs_.empty()) channel_->open_batch(open_jobs_);
  if (!reduce) return;
  ScopedPhase timer(prof_, Phase::Reduce, Lane::Comm);
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    if (opt_.emulated_reduce) {
      opt_.emulated_reduce(seg.count);
    } else {
      add_into(data + seg.offset, reduce_buf_.data() + (seg.offset - in.offset), seg.count);
    }
  }
}

// Waits with the ring's timeout and turns a transport failure into one line naming the message.
std::size_t RingAllreduce::wait(Request& r, const MessageContext& ctx) {
  try {
    return opt_.timeout.count() > 0 ? t_.wait(r, opt_.timeout) : t_.wait(r);
  } catch (const RunError& e) {
    throw RunError(std::string("ring all-reduce failed at ") + to_string(ctx) + ": " + e.what());
  }
}

}  // namespace tt::comm
