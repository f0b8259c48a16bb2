#include "comm/cuda/device_ring.h"

#include <utility>

#include "comm/cuda/reduce_kernel.h"

namespace tt::comm::cuda {

ReduceScratch DeviceReduceMemory::scratch(std::size_t reduce_floats, std::size_t wire_bytes) {
  reduce_.reserve(reduce_floats * sizeof(float));
  wire_out_.reserve(wire_bytes);
  wire_in_.reserve(wire_bytes);
  return {reduce_.as<float>(), {wire_out_.data(), wire_bytes}, {wire_in_.data(), wire_bytes}};
}

void DeviceReduceMemory::add_into(float* dst, const float* src, std::size_t n) {
  launch_add_into(dst, src, n, stream_);
}

void DeviceReduceMemory::wait_queued() {
  ::tt::cuda::check_cuda(cudaStreamSynchronize(stream_), "device ring: cudaStreamSynchronize", __FILE__,
                         __LINE__);
}

DeviceRingAllreduce::DeviceRingAllreduce(Transport& transport, cudaStream_t stream, RingOptions options,
                                         Profiler* profiler)
    : device_(current_device()),
      memory_(stream),
      ring_(transport, plain_, memory_, std::move(options), profiler) {}

DeviceRingAllreduce::DeviceRingAllreduce(Transport& transport, Channel& channel, cudaStream_t stream,
                                         RingOptions options, Profiler* profiler)
    : device_(current_device()),
      memory_(stream),
      ring_(transport, channel, memory_, std::move(options), profiler) {}

void DeviceRingAllreduce::allreduce_sum(float* device_data, std::size_t count, const MessageContext& id) {
  DeviceGuard guard(device_);  // scratch, kernels and the transport belong to our device
  ring_.allreduce_sum(device_data, count, id);
}

void DeviceRingAllreduce::reduce_scatter_sum(float* device_data, std::size_t count,
                                             const MessageContext& id) {
  DeviceGuard guard(device_);
  ring_.reduce_scatter_sum(device_data, count, id, ring_.options().segment_bytes);
}

void DeviceRingAllreduce::all_gather(float* device_data, std::size_t count, const MessageContext& id) {
  DeviceGuard guard(device_);
  ring_.all_gather(device_data, count, id, ring_.options().segment_bytes);
}

}  // namespace tt::comm::cuda
