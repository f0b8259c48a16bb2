#include "comm/cuda/device_ring.h"

#include <algorithm>
#include <string>
#include <utility>

#include "comm/cuda/reduce_kernel.h"
#include "engine/core/error.h"
#include "tee/errors.h"

namespace tt::comm::cuda {

namespace {

std::span<std::byte> bytes_of(float* p, std::size_t n) {
  return {reinterpret_cast<std::byte*>(p), n * sizeof(float)};
}

void count(Profiler* prof, Counter messages, Counter bytes, std::size_t n) {
  if (prof == nullptr) return;
  prof->add(messages, 1);
  prof->add(bytes, static_cast<int64_t>(n));
}

}  // namespace

DeviceRingAllreduce::DeviceRingAllreduce(Transport& transport, cudaStream_t stream, RingOptions options,
                                         Profiler* profiler)
    : DeviceRingAllreduce(transport, plain_, stream, options, profiler) {}

DeviceRingAllreduce::DeviceRingAllreduce(Transport& transport, DeviceCodec& codec, cudaStream_t stream,
                                         RingOptions options, Profiler* profiler)
    : t_(transport),
      codec_(&codec),
      stream_(stream),
      device_(current_device()),
      opt_(options),
      prof_(profiler) {}

// Balanced partition: the first (count % P) chunks get one extra element (as the CPU ring).
void DeviceRingAllreduce::prepare(std::size_t count, const MessageContext& id) {
  rank_ = t_.rank();
  size_ = t_.size();
  const bool pass = codec_->pass_through();
  geo_ = RingGeometry(rank_, size_, count, opt_.segment_bytes, id,
                      !pass && opt_.all_gather == AllGatherMode::ForwardWire, codec_->overhead());
  reduce_buf_.reserve(geo_.max_chunk() * sizeof(float));
  if (!pass) {
    wire_out_.reserve(geo_.wire_bytes());
    wire_in_.reserve(geo_.wire_bytes());
  }
}

void DeviceRingAllreduce::sync_stream(const char* what) const {
  check_cuda(cudaStreamSynchronize(stream_), what, __FILE__, __LINE__);
}

void DeviceRingAllreduce::allreduce_sum(float* data, std::size_t count, const MessageContext& id) {
  if (t_.size() == 1 || count == 0) return;
  if (data == nullptr) throw RunError("device ring all-reduce: null buffer");
  DeviceGuard guard(device_);
  prepare(count, id);
  // The first sends read `data`: whatever the caller queued on our stream must be done.
  sync_stream("device ring: cudaStreamSynchronize before the first send");
  const auto p = static_cast<std::uint32_t>(size_);
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.scatter_reduce_hop(s));
  for (std::uint32_t s = 0; s + 1 < p; ++s) run_hop(data, geo_.all_gather_hop(s));
}

void DeviceRingAllreduce::run_hop(float* data, const RingHop& h) {
  const std::size_t n_in = geo_.segments(geo_.chunk(h.recv_chunk));
  const std::size_t n_out = geo_.segments(geo_.chunk(h.send_chunk));
  sends_.clear();
  recvs_.clear();
  // Windows of w segments: receive window, send window, finish the receives. Every rank forms the same
  // windows, so a transport that issues lazily in groups (NCCL) sees matching groups on both ends.
  const std::size_t w = std::max<std::size_t>(codec_->parallelism(), 1);
  for (std::size_t k = 0; k < std::max(n_in, n_out); k += w) {
    if (k < n_in) post_receives(data, h, k, std::min(n_in, k + w));
    if (k < n_out) send_segments(data, h, k, std::min(n_out, k + w));
    if (k < n_in) {
      finish_receives(data, h, k, std::min(n_in, k + w));
    } else {
      (void)t_.test(sends_.back());  // a window with sends only: push them out now (NCCL group)
    }
  }
  // Sends must complete before their memory (user data or wire_out_) is touched by the next hop.
  const int next = (rank_ + 1) % size_;
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    wait(sends_[k], geo_.context(h, h.send_chunk, k, rank_, next,
                                 geo_.segment(geo_.chunk(h.send_chunk), k).count * sizeof(float)));
  }
  // The adds of this hop must finish before the next hop sends the reduced chunk and reuses reduce_buf_.
  sync_stream("device ring: cudaStreamSynchronize after a hop");
  // Forward-wire: the ciphertext received in this hop is exactly what we send in the next one.
  if (geo_.forwarding(h)) std::swap(wire_in_, wire_out_);
}

// Posts the receives of segments [k0, k1) of the incoming chunk.
void DeviceRingAllreduce::post_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int prev = (rank_ + size_ - 1) % size_;
  const RingRange in = geo_.chunk(h.recv_chunk);
  const bool pass = codec_->pass_through();
  const bool reduce = h.phase == MessagePhase::ScatterReduce;
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    std::span<std::byte> dst;
    if (!pass) {
      dst = {wire_in_.data() + geo_.wire_offset(k), seg.count * sizeof(float) + codec_->overhead()};
    } else if (reduce) {
      dst = bytes_of(reduce_buf_.as<float>() + (seg.offset - in.offset), seg.count);
    } else {
      dst = bytes_of(data + seg.offset, seg.count);  // all-gather lands in user memory: zero copies
    }
    recvs_.push_back(t_.irecv(prev, dst, opt_.tag));
  }
}

// Seals segments [k0, k1) of the outgoing chunk (one batch) and posts their sends.
void DeviceRingAllreduce::send_segments(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int next = (rank_ + 1) % size_;
  const RingRange out = geo_.chunk(h.send_chunk);
  const bool pass = codec_->pass_through();
  // Forward-wire hops after the first resend the owner's sealed bytes, already in wire_out_.
  const bool reseal = !pass && !(geo_.forwarding(h) && h.index > 0);
  jobs_.clear();
  for (std::size_t k = k0; k < k1 && reseal; ++k) {
    const RingRange seg = geo_.segment(out, k);
    const std::size_t plain = seg.count * sizeof(float);
    jobs_.push_back({geo_.context(h, h.send_chunk, k, rank_, next, plain),
                     reinterpret_cast<const std::byte*>(data + seg.offset),
                     wire_out_.data() + geo_.wire_offset(k), plain});
  }
  if (!jobs_.empty()) codec_->seal_batch(jobs_);  // blocking: the wire bytes are complete on return
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(out, k);
    std::span<const std::byte> wire = bytes_of(data + seg.offset, seg.count);  // pass-through: user memory
    if (!pass) wire = {wire_out_.data() + geo_.wire_offset(k), wire.size() + codec_->overhead()};
    sends_.push_back(t_.isend(next, wire, opt_.tag));
    count(prof_, Counter::MessagesSent, Counter::BytesSent, wire.size());
  }
}

// Waits for segments [k0, k1) of the incoming chunk, checks their lengths, opens them (one batch) and,
// in scatter-reduce, enqueues their adds on the ring's stream.
void DeviceRingAllreduce::finish_receives(float* data, const RingHop& h, std::size_t k0, std::size_t k1) {
  const int prev = (rank_ + size_ - 1) % size_;
  const RingRange in = geo_.chunk(h.recv_chunk);
  const bool pass = codec_->pass_through();
  const bool reduce = h.phase == MessagePhase::ScatterReduce;
  float* scratch = reduce_buf_.as<float>();
  jobs_.clear();
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    const std::size_t plain_bytes = seg.count * sizeof(float);
    const MessageContext ctx = geo_.context(h, h.recv_chunk, k, prev, rank_, plain_bytes);
    const std::size_t expected = plain_bytes + (pass ? 0 : codec_->overhead());
    const std::size_t got = wait(recvs_[k], ctx);
    count(prof_, Counter::MessagesReceived, Counter::BytesReceived, got);
    if (got != expected) {
      const std::string what = "device ring all-reduce: rank " + std::to_string(rank_) +
                               " got a short message from rank " + std::to_string(prev) + " (" +
                               std::to_string(got) + " of " + std::to_string(expected) + " bytes) at " +
                               to_string(ctx);
      // Sealed traffic cut short is an attack signal like a bad tag (exit 3), not a transport failure.
      if (!pass) throw tee::IntegrityError(what);
      throw RunError(what);
    }
    if (!pass) {
      // Scatter-reduce opens into scratch (then adds); all-gather opens straight into user memory.
      float* plain = reduce ? scratch + (seg.offset - in.offset) : data + seg.offset;
      jobs_.push_back(
          {ctx, wire_in_.data() + geo_.wire_offset(k), reinterpret_cast<std::byte*>(plain), plain_bytes});
    }
  }
  if (!jobs_.empty()) codec_->open_batch(jobs_);  // blocking; throws naming the context on failure
  if (!reduce) return;
  for (std::size_t k = k0; k < k1; ++k) {
    const RingRange seg = geo_.segment(in, k);
    launch_add_into(data + seg.offset, scratch + (seg.offset - in.offset), seg.count, stream_);
  }
}

// Waits with the ring's timeout and turns a transport failure into one line naming the message.
std::size_t DeviceRingAllreduce::wait(Request& r, const MessageContext& ctx) {
  try {
    return opt_.timeout.count() > 0 ? t_.wait(r, opt_.timeout) : t_.wait(r);
  } catch (const RunError& e) {
    throw RunError("device ring all-reduce on rank " + std::to_string(rank_) + " failed at " +
                   to_string(ctx) + ": " + e.what());
  }
}

}  // namespace tt::comm::cuda
