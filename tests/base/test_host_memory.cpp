// Note [Released gradient pages]: zero() leaves zeros in the range, writes only its partial end pages,
// and hands the whole pages inside back to the system (resident bytes drop by exactly those).
// Note [Pages faulted in at once]: prefault() brings such pages back at once, so that writing them
// faults no more.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "base/host_memory.h"

namespace tt {
namespace {

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
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t floats_per_page = page / sizeof(float);
  const std::size_t pages = 64;
  const std::size_t n = pages * floats_per_page;
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

}  // namespace
}  // namespace tt
