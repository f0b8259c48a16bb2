#include "comm/cuda/device_codec.h"

#include "comm/cuda/cuda_util.h"

namespace tt::comm::cuda {

namespace {

// cudaStreamPerThread: no stream to own, and it does not serialise with other streams.
void copy_all(std::span<const DeviceCodec::Job> jobs) {
  for (const auto& j : jobs) {
    if (j.plain_bytes == 0) continue;
    TT_COMM_CUDA_CHECK(
        cudaMemcpyAsync(j.out, j.in, j.plain_bytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread));
  }
  TT_COMM_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

}  // namespace

void PlainDeviceCodec::seal_batch(std::span<const Job> jobs) {
  copy_all(jobs);
}

void PlainDeviceCodec::open_batch(std::span<const Job> jobs) {
  copy_all(jobs);
}

}  // namespace tt::comm::cuda
