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
#include <mutex>
#include <new>
#include <utility>
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

// Note [Pooled pages]: releasing a page and writing it again costs the kernel a page freed, then one
// allocated and cleared (Note [Pages faulted in at once]: 1.2 us a page populated at once on the VM of
// docs/benchmarks.md, about 4,200 pages a ZeRO-3 step of gpt2-mini). A PagePool keeps the physical pages
// instead: release() moves a range's whole pages into the pool's own mapping with mremap(2)
// (MREMAP_DONTUNMAP: the range stays mapped and reads as zeros when next touched, as after
// MADV_DONTNEED), and refill() moves pooled pages into a released range about to be written, 0.02 us a
// page, neither cleared nor faulted. Pooled pages hold whatever they held, so refill() takes a
// Contents: Stale where the range is then overwritten whole (a ZeRO-3 gather's destination), Zeros where
// it must read as zeros (gradients backward accumulates into): those pages are cleared by memset, 0.05 us
// a page, and only pages that are not resident (mincore: they read as zeros) are replaced, so whatever a
// range holds is never lost. The pool holds at most its capacity (ZeRO-3's: two units' bytes, what
// the units released lately hold for the next ones' gathers and gradients); beyond it release() hands
// pages back with MADV_DONTNEED. Its pages are resident memory like any other: peak_bytes() is the most
// it held, the summary's pool_resident_peak. Moved pages split mappings where a moved range begins and
// ends; the ranges are the same every step (the buckets'), so the process's map count stays bounded.
// Where the kernel refuses a move (before Linux 5.7 there is no MREMAP_DONTUNMAP; before 6.17 a move
// may not span two mappings, which moved pages make of a range; the map count exhausted), the range is
// released or faulted in as before, so every result is the same either way. Private anonymous memory
// only: the gradient mapping, allocate_host_bytes' large buffers.
class PagePool {
 public:
  enum class Contents { Stale, Zeros };

  // Room for `capacity` bytes (whole pages), none held. Throws std::bad_alloc.
  explicit PagePool(std::size_t capacity)
      : capacity_(capacity / page_bytes() * page_bytes()),
        base_(capacity_ == 0 ? nullptr
                             : mmap(nullptr, capacity_, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) {
    if (base_ == MAP_FAILED) throw std::bad_alloc();
  }
  ~PagePool() {
    if (base_ != nullptr) munmap(base_, capacity_);
  }
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // The whole pages inside [p, p + bytes) leave the range, which reads as zeros until written: its
  // resident ones into the pool while it has room, the rest back to the system. Either thread.
  void release(void* p, std::size_t bytes) {
    const auto [from, to] = whole_pages(p, bytes);
    if (to <= from) return;
    {
      std::lock_guard lock(mu_);
      for_each_run(from, to, Residency::Resident, [this](std::uintptr_t a, std::size_t n) {
        n = std::min(n, capacity_ - held_);
        if (n > 0 && move(reinterpret_cast<void*>(a), n, at(held_))) held_ += n;
      });
      peak_held_ = std::max(peak_held_, held_);
    }
    madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);  // what the pool did not take
  }

  // [p, p + bytes), released, is about to be written: its whole pages that are not resident receive
  // pooled pages while the pool has any (Note [Pooled pages]), and the rest are faulted in at once.
  void refill(void* p, std::size_t bytes, Contents contents) {
    const auto [from, to] = whole_pages(p, bytes);
    if (to > from) {
      std::lock_guard lock(mu_);
      for_each_run(from, to, Residency::Absent, [this, contents](std::uintptr_t a, std::size_t n) {
        n = std::min(n, held_);
        if (n == 0 || !move(at(held_ - n), n, reinterpret_cast<void*>(a))) return;
        held_ -= n;
        if (contents == Contents::Zeros) std::fill_n(reinterpret_cast<unsigned char*>(a), n, 0);
      });
    }
    prefault_host_bytes(p, bytes);  // what the pool did not cover; nothing where every page is present
  }

  std::size_t capacity() const { return capacity_; }
  // Bytes of the pool's pages resident now (mincore).
  std::size_t resident_bytes() const {
    std::lock_guard lock(mu_);
    return held_ == 0 ? 0 : resident_host_bytes(base_, held_);
  }
  // The most bytes it has held: resident, as release() moves resident pages only.
  std::size_t peak_bytes() const {
    std::lock_guard lock(mu_);
    return peak_held_;
  }

 private:
  static std::uintptr_t page_bytes() { return static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)); }
  static std::pair<std::uintptr_t, std::uintptr_t> whole_pages(void* p, std::size_t bytes) {
    const auto page = page_bytes();
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    return {(begin + page - 1) / page * page, (begin + bytes) / page * page};
  }
  void* at(std::size_t offset) const { return static_cast<char*>(base_) + offset; }
  enum class Residency { Absent, Resident };
  // fn(start, bytes) for each run of pages in [from, to) (whole pages) that are `which`; none where
  // mincore fails.
  template <typename Fn>
  static void for_each_run(std::uintptr_t from, std::uintptr_t to, Residency which, Fn fn) {
    const std::uintptr_t page = page_bytes();
    std::vector<unsigned char> in_core((to - from) / page);  // one byte per page
    if (mincore(reinterpret_cast<void*>(from), to - from, in_core.data()) != 0) return;
    const auto wanted = [&](std::size_t i) {
      return ((in_core[i] & 1u) != 0) == (which == Residency::Resident);
    };
    for (std::size_t i = 0; i < in_core.size();) {
      std::size_t j = i;
      while (j < in_core.size() && wanted(j)) ++j;
      if (j > i) fn(from + i * page, (j - i) * page);
      i = j + 1;
    }
  }
  // The pages of [src, src + n) to dst; src stays mapped, empty. False where the kernel refuses.
  static bool move(void* src, std::size_t n, void* dst) {
#ifdef MREMAP_DONTUNMAP
    return mremap(src, n, n, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, dst) != MAP_FAILED;
#else
    (void)src;
    (void)n;
    (void)dst;
    return false;
#endif
  }

  mutable std::mutex mu_;
  std::size_t capacity_;
  void* base_;
  std::size_t held_ = 0;  // the pooled pages are [base_, base_ + held_)
  std::size_t peak_held_ = 0;
};

// Note [Released gradient pages]: a sharded run's gradients (ZeRO-2 and ZeRO-3) live in a mapping of
// their own, private and anonymous, on 4 KiB pages. After a bucket's reduce-scatter the rank needs only
// its ring chunk of it; zero() hands the whole pages of the rest back to the system with
// madvise(MADV_DONTNEED), or moves them into a PagePool (Note [Pooled pages]), which on exactly such
// memory is a promise, not advice: the pages read as zeros when next touched. So the same call is the next
// step's zero_grad for the released ranges (only the partial pages at a range's ends are written) and
// backward's accumulation finds zeros there without a pass over them. Why a mapping we own:
// allocate_host_bytes' memory comes from the C library (or a sanitizer's allocator, which keeps its own state
// in and around it), whose pages are not ours to drop, and a shared mapping (Note [Shared buffers]) would
// keep its pages and their values. Why 4 KiB pages: dropping part of a transparent huge page splits it, and
// the kernel may collapse the mostly empty range back into a huge page; releasing whole 2 MiB pages only
// would release nothing of small buckets. The price is the ring's copies on 4 KiB pages (Note [Huge pages for
// large host buffers]).
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
  // x[0, n) (inside this buffer) reads as zeros; its whole pages are returned to the system, or moved
  // into `pool` while it has room (Note [Pooled pages]).
  void zero(float* x, std::size_t n, PagePool* pool = nullptr) const {
    if (n == 0) return;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(x);
    const auto end = begin + n * sizeof(float);
    const auto from = std::min(end, (begin + page - 1) / page * page);
    const auto to = std::max(from, end / page * page);
    std::fill(x, reinterpret_cast<float*>(from), 0.0f);  // the partial pages at either end
    std::fill(reinterpret_cast<float*>(to), reinterpret_cast<float*>(end), 0.0f);
    if (to > from && pool != nullptr) {
      pool->release(reinterpret_cast<void*>(from), to - from);
      return;
    }
    // Refused (it is not, on this mapping), the pages are written instead.
    if (to > from && madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED) != 0)
      std::fill(reinterpret_cast<float*>(from), reinterpret_cast<float*>(to), 0.0f);
  }
  // x[0, n) (inside this buffer) is about to be written: its pages faulted in at once (Note [Pages
  // faulted in at once]), or its released pages taken from `pool` and cleared (Note [Pooled pages]).
  void prefault(float* x, std::size_t n, PagePool* pool = nullptr) const {
    if (pool == nullptr) return prefault_host_bytes(x, n * sizeof(float));
    pool->refill(x, n * sizeof(float), PagePool::Contents::Zeros);
  }
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
