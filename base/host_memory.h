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

// Note [Pages faulted in at once]: a page handed back (discard_host_bytes, ReleasableHostBuffer::zero)
// costs a fault when it is next touched, and on a VM a fault is dear: on the 2-core EPYC VM of
// docs/benchmarks.md, writing 8 MiB of released pages took 3.7 us a page (7.5 ms), reading then writing
// them (a GEMM accumulating into a gradient: the zero page first, then a copy-on-write fault) 4.9 us, and
// madvise(MADV_POPULATE_WRITE) on the range first 1.2 us (the kernel allocates and clears the pages in one
// call, no exception per page). So where released pages are about to be written whole — a ZeRO-3
// gather's destination, the gradients of the block backward is about to run — they are faulted in at
// once. Resident memory is what the writes would have made it, a moment earlier. The pages around the
// range count whole; where the advice is refused (a kernel before 5.14) the writes fault as before.
inline void prefault_host_bytes(void* p, std::size_t bytes) noexcept {
#ifdef MADV_POPULATE_WRITE
  if (bytes == 0) return;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto to = (reinterpret_cast<std::uintptr_t>(p) + bytes + page - 1) / page * page;
  madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
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

// Bytes of the pages holding [p, p + bytes) that are resident now (mincore(2) on the pages around the
// range; 0 where it cannot tell). Pages shared with the range's neighbours count whole.
inline std::size_t resident_host_bytes(const void* p, std::size_t bytes) {
  if (bytes == 0) return 0;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto to = (reinterpret_cast<std::uintptr_t>(p) + bytes + page - 1) / page * page;
  std::vector<unsigned char> in_core((to - from) / page);  // one byte per page
  if (mincore(reinterpret_cast<void*>(from), to - from, in_core.data()) != 0) return 0;
  std::size_t n = 0;
  for (const unsigned char c : in_core) n += c & 1u;
  return n * page;
}

// Note [Released gradient pages]: a sharded run's gradients (ZeRO-2 and ZeRO-3) live in a mapping of
// their own, private and anonymous, on 4 KiB pages. After a bucket's reduce-scatter the rank needs only
// its ring chunk of it; zero() hands the whole pages of the rest back to the system with
// madvise(MADV_DONTNEED), which on exactly such memory is a promise, not advice: the pages read as zeros
// when next touched. So the same call is the next step's zero_grad for the released ranges (only the
// partial pages at a range's ends are written) and backward's accumulation finds zeros there without a
// pass over them. Why a mapping we own: allocate_host_bytes' memory comes from the C library (or a
// sanitizer's allocator, which keeps its own state in and around it), whose pages are not ours to drop,
// and a shared mapping (Note [Shared buffers]) would keep its pages and their values. Why 4 KiB pages:
// dropping part of a transparent huge page splits it, and the kernel may collapse the mostly empty range
// back into a huge page; releasing whole 2 MiB pages only would release nothing of small buckets. The
// price is the ring's copies on 4 KiB pages (Note [Huge pages for large host buffers]).
class ReleasableHostBuffer {
 public:
  // `bytes` of zeros, none of them resident yet. Throws std::bad_alloc.
  explicit ReleasableHostBuffer(std::size_t bytes)
      : bytes_(std::max<std::size_t>(bytes, 1)),
        base_(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    madvise(base_, bytes_, MADV_NOHUGEPAGE);  // advice: where refused, the kernel's default stays
  }
  ~ReleasableHostBuffer() { munmap(base_, bytes_); }
  ReleasableHostBuffer(const ReleasableHostBuffer&) = delete;
  ReleasableHostBuffer& operator=(const ReleasableHostBuffer&) = delete;

  float* floats() const { return static_cast<float*>(base_); }
  std::size_t bytes() const { return bytes_; }
  // x[0, n) (inside this buffer) reads as zeros; its whole pages are returned to the system.
  void zero(float* x, std::size_t n) const {
    if (n == 0) return;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(x);
    const auto end = begin + n * sizeof(float);
    const auto from = std::min(end, (begin + page - 1) / page * page);
    const auto to = std::max(from, end / page * page);
    std::fill(x, reinterpret_cast<float*>(from), 0.0f);  // the partial pages at either end
    std::fill(reinterpret_cast<float*>(to), reinterpret_cast<float*>(end), 0.0f);
    // Refused (it is not, on this mapping), the pages are written instead.
    if (to > from && madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED) != 0)
      std::fill(reinterpret_cast<float*>(from), reinterpret_cast<float*>(to), 0.0f);
  }
  // x[0, n) (inside this buffer) is about to be written: its pages faulted in at once (Note [Pages
  // faulted in at once]).
  void prefault(float* x, std::size_t n) const { prefault_host_bytes(x, n * sizeof(float)); }
  std::size_t resident_bytes() const { return resident_host_bytes(base_, bytes_); }

 private:
  std::size_t bytes_;
  void* base_;
};

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
