// The one opener of user-given files (tee/regular_file.h): a FIFO, directory or device is refused at
// once with an InputError naming the path and what it is (a FIFO with no writer must not block);
// open failures are worded; printable_path escapes what is not UTF-8.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "base/error.h"
#include "tee/regular_file.h"
#include "tests/tee/test_util.h"

namespace tt::tee {
namespace {

std::string refusal(const std::filesystem::path& p) {
  try {
    (void)read_regular_file(p, "thing", 1 << 20);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RegularFile, ReadsARegularFile) {
  test::TempDir dir;
  std::ofstream(dir / "f") << "hello";
  EXPECT_EQ(read_regular_file(dir / "f", "thing", 5), (std::vector<std::uint8_t>{'h', 'e', 'l', 'l', 'o'}));
  const RegularFile f = open_regular_file(dir / "f", "thing");
  EXPECT_TRUE(f.fd);
  EXPECT_EQ(f.size, 5u);
  EXPECT_NE(refusal(dir / "f").find("accepted"), std::string::npos);
  EXPECT_THROW((void)read_regular_file(dir / "f", "thing", 4), InputError);  // over the limit
}

TEST(RegularFile, RefusesAFifoWithoutBlocking) {
  test::TempDir dir;
  const auto p = dir / "pipe";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  // No writer ever opens it: a blocking open would hang this test (CTest's timeout fails it).
  EXPECT_EQ(refusal(p), "thing '" + p.string() + "': is a FIFO (named pipe), not a regular file");
  const OpenAttempt a = try_open_regular(p);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.error, 0);
  EXPECT_TRUE(S_ISFIFO(a.type));
}

TEST(RegularFile, NamesWhatItRefuses) {
  test::TempDir dir;
  EXPECT_NE(refusal(dir.path()).find("is a directory, not a regular file"), std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("is a character device, not a regular file"), std::string::npos);
  EXPECT_NE(refusal(dir / "missing").find("not found"), std::string::npos);
  EXPECT_NE(refusal(dir / std::string(300, 'n')).find("too long"), std::string::npos);
  std::filesystem::create_symlink(dir / "missing", dir / "link");
  EXPECT_NE(try_open_regular(dir / "link", FollowLinks::No).why().find("symbolic link"), std::string::npos);
}

// What a run checks before it starts, for outputs it writes later: a FIFO, a directory or a missing
// directory is named; a missing file in an existing directory, or a regular file, may be written.
TEST(RegularFile, OutputPathProblemsAreNamedBeforeTheRun) {
  test::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(output_path_problem(fifo, "--summary"),
            "--summary " + fifo.string() + ": cannot be written: is a FIFO (named pipe), not a regular file");
  EXPECT_NE(output_path_problem(dir.path(), "--trace").find("is a directory, not a regular file"),
            std::string::npos);
  EXPECT_NE(output_path_problem(dir / "nodir" / "s.json", "--metrics").find("its directory"),
            std::string::npos);
  EXPECT_EQ(output_path_problem(dir / "new.json", "--summary"), "");
  std::ofstream(dir / "old.json") << "{}";
  EXPECT_EQ(output_path_problem(dir / "old.json", "--summary"), "");
}

TEST(RegularFile, PrintablePathEscapesInvalidUtf8) {
  EXPECT_EQ(printable_path("/tmp/caf\xc3\xa9"), "/tmp/caf\xc3\xa9");  // valid UTF-8 is kept
  EXPECT_EQ(printable_path("/tmp/ck-\xff\xfe"), "/tmp/ck-\\xff\\xfe");
  EXPECT_EQ(printable_path("a\xc3"), "a\\xc3");                  // cut sequence
  EXPECT_EQ(printable_path("\xc0\xaf"), "\\xc0\\xaf");           // overlong encoding of '/'
  EXPECT_EQ(printable_path("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
}

}  // namespace
}  // namespace tt::tee
