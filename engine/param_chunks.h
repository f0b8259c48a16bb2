// The model's parameters visited in bounded host-side chunks (hashing, broadcast, replica checks).
//
// A whole-model host copy costs as much memory as the model: 6.2 GB per rank for gpt2-xl, which with
// the broadcast's copy and the final hash's pushed four emulated gpt2-xl ranks past a 24 GB machine.
// Chunks of 16 Mi floats (64 MiB) keep that bounded whatever the model, on the CPU and the GPU
// backends alike; the bytes visited, and so every digest, are the same as for one whole copy.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/model.h"

namespace tt {

inline constexpr std::size_t kParamChunkFloats = std::size_t{16} << 20;

// Calls fn(chunk) for consecutive chunks of the parameters, in order, each a host copy of at most
// chunk_floats floats. With write_back, each chunk is copied back to the model after fn (which may
// change it).
template <typename Fn>
void for_param_chunks(Backend& backend, Model& model, bool write_back, Fn&& fn,
                      std::size_t chunk_floats = kParamChunkFloats) {
  const std::size_t n = model.num_params();
  std::vector<float> host(std::min(n, std::max<std::size_t>(1, chunk_floats)));  // (chunk,) floats
  for (std::size_t off = 0; off < n; off += host.size()) {
    const std::span<float> chunk(host.data(), std::min(host.size(), n - off));
    backend.copy_to_host(chunk.data(), model.param_data() + off, chunk.size_bytes());
    fn(chunk);
    if (write_back) backend.copy_to_device(model.param_data() + off, chunk.data(), chunk.size_bytes());
  }
}

// The SHA-256 of the parameters' bytes in order, as lowercase hex: a run's `params_sha256`, and what a
// checkpoint's state.json records of the model it holds.
std::string params_sha256(Backend& backend, Model& model);

}  // namespace tt
