// Note [Released gradient pages]: zero() leaves zeros in the range, writes only its partial end pages,
// and hands the whole pages inside back to the system (resident bytes drop by exactly those).
// Note [Pages faulted in at once]: prefault() brings such pages back at once, so that writing them
// faults no more.
// Note [Pooled pages]: a PagePool moves released pages where a range is about to be written, so that
// neither the release nor the writes fault, the released range reads as zeros and is not resident, a
// range that must read as zeros does, and the process's mappings stay bounded.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <string>

#include "base/host_memory.h"

namespace tt {
namespace {

struct PageSpan {
  std::size_t page;  // bytes of a page
  std::size_t floats_per_page;
  std::size_t n;  // floats in `pages` pages
};
PageSpan span_of(std::size_t pages) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return {page, page / sizeof(float), pages * (page / sizeof(float))};
}

TEST(ReleasableHostBuffer, ZeroReleasesWholePagesAndKeepsTheNeighbours) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t floats_per_page = page / sizeof(float);
  const std::size_t n = 16 * floats_per_page;
  ReleasableHostBuffer buf(n * sizeof(float));
  float* x = buf.floats();
  EXPECT_EQ(buf.resident_bytes(), 0u);  // nothing touched yet
  std::fill(x, x + n, 1.5f);
  EXPECT_EQ(buf.resident_bytes(), 16 * page);
  // From the middle of page 2 to the middle of page 9: pages 3..8 go, the halves stay written.
  const std::size_t from = 2 * floats_per_page + floats_per_page / 2;
  const std::size_t to = 9 * floats_per_page + floats_per_page / 2;
  buf.zero(x + from, to - from);
  EXPECT_EQ(buf.resident_bytes(), 10 * page);
  EXPECT_TRUE(std::all_of(x, x + from, [](float v) { return v == 1.5f; }));
  EXPECT_TRUE(std::all_of(x + from, x + to, [](float v) { return v == 0.0f; }));
  EXPECT_TRUE(std::all_of(x + to, x + n, [](float v) { return v == 1.5f; }));
  // A range inside one page is written, not released.
  buf.zero(x + 1, 3);
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[4], 1.5f);
  EXPECT_EQ(resident_host_bytes(x, n * sizeof(float)), buf.resident_bytes());
}

// Minor page faults of this thread so far.
long thread_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

TEST(ReleasableHostBuffer, PrefaultedPagesAreWrittenWithoutAFaultEach) {
  const std::size_t pages = 64;
  const auto [page, floats_per_page, n] = span_of(pages);
  ReleasableHostBuffer buf(n * sizeof(float));
  float* x = buf.floats();
  std::fill(x, x + n, 1.5f);
  buf.zero(x, n);
  EXPECT_EQ(buf.resident_bytes(), 0u);
  // A range from inside the first page to inside the last: the pages around it count whole.
  buf.prefault(x + floats_per_page / 2, n - floats_per_page);
  EXPECT_EQ(buf.resident_bytes(), pages * page);
  EXPECT_TRUE(std::all_of(x, x + n, [](float v) { return v == 0.0f; }));
  const long before = thread_faults();
  std::fill(x, x + n, 2.5f);
  // Written after a release alone, each page would fault (64); a sanitizer's shadow may fault a few.
  EXPECT_LT(thread_faults() - before, static_cast<long>(pages / 8));
}

// ThreadSanitizer clears its shadow of a range mremap(2) moves pages to, so the writes there fault in
// shadow pages (eight a page): fault counts tell nothing under it.
#if defined(__SANITIZE_THREAD__)
constexpr bool kCountFaults = false;
#else
constexpr bool kCountFaults = true;
#endif

// Lines of /proc/self/maps: the process's mappings.
std::size_t mapping_count() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

TEST(PagePool, ReleasedPagesReachARangeWrittenWholeWithoutAFault) {
  const std::size_t pages = 64;
  const auto [page, floats_per_page, n] = span_of(pages);
  ReleasableHostBuffer src(n * sizeof(float));
  ReleasableHostBuffer dst(n * sizeof(float));
  PagePool pool(pages * page);
  std::fill(src.floats(), src.floats() + n, 1.5f);
  pool.release(src.floats(), n * sizeof(float));
  EXPECT_EQ(src.resident_bytes(), 0u);
  EXPECT_EQ(pool.resident_bytes(), pages * page);
  EXPECT_TRUE(std::all_of(src.floats(), src.floats() + n, [](float v) { return v == 0.0f; }));
  const long before = thread_faults();
  pool.refill(dst.floats(), n * sizeof(float), PagePool::Contents::Stale);
  std::fill(dst.floats(), dst.floats() + n, 2.5f);
  // Faulted in by the kernel instead, each page would count one fault (64); a sanitizer's shadow and
  // the pool's own bookkeeping may fault a few.
  if (kCountFaults) {
    EXPECT_LT(thread_faults() - before, static_cast<long>(pages / 2));
  }
  EXPECT_EQ(dst.resident_bytes(), pages * page);
  EXPECT_EQ(pool.resident_bytes(), 0u);
}

TEST(PagePool, ARangeRefilledWithZerosKeepsWhatItHoldsAndReadsAsZerosElsewhere) {
  const std::size_t pages = 64;
  const auto [page, floats_per_page, n] = span_of(pages);
  ReleasableHostBuffer buf(n * sizeof(float));
  PagePool pool(16 * page);  // less than is released: the rest goes back to the system
  float* x = buf.floats();
  std::fill(x, x + n, 1.5f);
  buf.zero(x, n / 2, &pool);
  EXPECT_EQ(pool.resident_bytes(), 16 * page);
  EXPECT_EQ(buf.resident_bytes(), (pages / 2) * page);
  x[n - 1] = 3.0f;  // a page backward has written since: kept
  const long before = thread_faults();
  buf.prefault(x, n, &pool);
  EXPECT_EQ(pool.resident_bytes(), 0u);
  EXPECT_EQ(buf.resident_bytes(), pages * page);
  EXPECT_TRUE(std::all_of(x, x + n / 2, [](float v) { return v == 0.0f; }));
  EXPECT_TRUE(std::all_of(x + n / 2, x + n - 1, [](float v) { return v == 1.5f; }));
  EXPECT_EQ(x[n - 1], 3.0f);
  std::fill(x, x + n, 2.5f);
  // The pool's 16 pages moved, the other 16 faulted in at once (one each); all 32 from the kernel
  // without the pool. AddressSanitizer's shadow of the 64 pages read and written adds 8 (one shadow page
  // per 8 pages) either way: 24 against 40 under it.
  if (kCountFaults) {
    EXPECT_LT(thread_faults() - before, static_cast<long>(16 + 16));
  }
}

TEST(PagePool, MappingsStayBoundedOverManyRounds) {
  const std::size_t pages = 96;
  const auto [page, floats_per_page, n] = span_of(pages);
  ReleasableHostBuffer a(n * sizeof(float));
  ReleasableHostBuffer b(n * sizeof(float));
  PagePool pool(40 * page);
  std::fill(a.floats(), a.floats() + n, 1.0f);
  std::fill(b.floats(), b.floats() + n, 1.0f);
  // Ranges of several sizes released and written in turn, as a step's units and buckets are.
  const std::size_t sizes[] = {7, 24, 13, 31};
  std::size_t after_first = 0;
  for (int round = 0; round < 200; ++round) {
    std::size_t at = 0;
    for (const std::size_t s : sizes) {
      pool.release(a.floats() + at * floats_per_page, s * page);
      pool.refill(b.floats() + at * floats_per_page, s * page, PagePool::Contents::Stale);
      std::fill_n(b.floats() + at * floats_per_page, s * floats_per_page, 2.0f);
      pool.release(b.floats() + at * floats_per_page, s * page);
      pool.refill(a.floats() + at * floats_per_page, s * page, PagePool::Contents::Zeros);
      at += s;
    }
    if (round == 1) after_first = mapping_count();
  }
  const std::size_t moved = 75 * floats_per_page;  // the sizes' sum
  EXPECT_TRUE(std::all_of(a.floats(), a.floats() + moved, [](float v) { return v == 0.0f; }));
  EXPECT_TRUE(std::all_of(a.floats() + moved, a.floats() + n, [](float v) { return v == 1.0f; }));
  EXPECT_LE(mapping_count(), after_first + 8);
}

}  // namespace
}  // namespace tt
