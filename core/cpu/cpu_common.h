// Helpers shared by the CPU backend's op files (internal to core/cpu).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tt::cpu {

// Elementwise loops shorter than this run on the calling thread: an OpenMP fork/join costs a few
// microseconds, more than the loop itself.
inline constexpr std::ptrdiff_t kParallelMin = 1 << 15;

// Fixed chunk size for chunked reductions (sum_squares, mean). Chunk boundaries depend only on n,
// never on the thread count, and the chunk partials are added in chunk order, so the result is
// bit-identical for any thread count.
inline constexpr std::ptrdiff_t kReduceChunk = 1 << 14;

// Column-block width for reductions over rows (dweight, dbias, dwpe, dwte): each output column is one
// sequential sum over rows, and a block of columns is the unit of work handed to a thread.
inline constexpr int kColBlock = 64;

// Number of chunks of size `chunk` covering n elements.
constexpr std::ptrdiff_t num_chunks(std::ptrdiff_t n, std::ptrdiff_t chunk) {
  return (n + chunk - 1) / chunk;
}

}  // namespace tt::cpu
