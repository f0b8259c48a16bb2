// Which memory a buffer lives in. Channels and the ring's memory policy say theirs, so a sealing
// channel that reads host memory is never handed device pointers (and the reverse).
#pragma once
#include <cstdint>

namespace tt::comm {

enum class MemorySpace : std::uint8_t {
  Host,
  Device,  // the current CUDA device's memory
};

inline const char* memory_space_name(MemorySpace m) {
  return m == MemorySpace::Host ? "host" : "device";
}

}  // namespace tt::comm
