// Host buffers for bulk data (parameters, gradients, ring scratch, benchmark buffers): 64-byte aligned,
// and from 2 MiB up on transparent huge pages.
//
// Note [Huge pages for large host buffers]: Debian enables transparent huge pages for memory that asks
// for them (madvise). A rank's gradients cross to its neighbour through Open MPI's shared-memory
// transport, whose large messages are one cross-process copy (process_vm_readv) that pins the pages it
// copies: with 4 KiB pages that pinning, and the TLB misses of streaming tens of MiB, dominated. On a
// 2-core VM at P = 2, a 16 MiB all-reduce took 4.9 ms (ring) and 4.6 ms (MPI_Allreduce) on 4 KiB pages
// and 1.8-2.0 ms on huge pages. The advice costs nothing where it is refused: the pages stay 4 KiB.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace tt {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kCacheLineBytes = 64;

// At least `bytes` of uninitialised memory, 64-byte aligned (2 MiB aligned and advised onto huge pages
// from 2 MiB up). Free with free_host_bytes. Throws std::bad_alloc.
inline void* allocate_host_bytes(std::size_t bytes) {
  const std::size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kCacheLineBytes;
  // aligned_alloc needs a size that is a multiple of the alignment.
  const std::size_t rounded = std::max(align, (bytes + align - 1) / align * align);
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (align == kHugePageBytes) madvise(p, rounded, MADV_HUGEPAGE);  // advice: refused, it costs nothing
  return p;
}

inline void free_host_bytes(void* p) noexcept {
  std::free(p);
}

// Returns the whole pages inside [p, p + bytes) to the system; they read as zeros until written again
// (private anonymous memory, as allocate_host_bytes gives). Bytes on pages shared with the neighbours of
// the range are kept. Advice: where it is refused nothing changes but the memory held.
inline void discard_host_bytes(void* p, std::size_t bytes) noexcept {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto to = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

// This process's resident set now, in bytes (Linux: /proc/self/statm; 0 where it cannot be read).
inline std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const bool ok = std::fscanf(f, "%lu %lu", &size, &resident) == 2;
  std::fclose(f);
  return ok ? resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// std::vector's allocator for such buffers (Note [Huge pages for large host buffers]).
template <typename T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <typename U>
  explicit HostAllocator(const HostAllocator<U>& /*other*/) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_host_bytes(n * sizeof(T))); }
  void deallocate(T* p, std::size_t /*n*/) noexcept { free_host_bytes(p); }
  friend bool operator==(const HostAllocator& /*a*/, const HostAllocator& /*b*/) { return true; }
};

template <typename T>
using HostVector = std::vector<T, HostAllocator<T>>;

}  // namespace tt
