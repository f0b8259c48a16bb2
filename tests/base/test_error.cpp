// base/error.h: each error type carries the exit code the README documents (1 run failure, 2 bad
// input, 3 integrity failure), and exit_code_of maps anything else to 1. main() relies on both.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "base/error.h"

namespace tt {
namespace {

int code_of(const std::exception& e) {
  return static_cast<int>(exit_code_of(e));
}

TEST(ErrorCategories, EachTypeHasItsDocumentedExitCode) {
  EXPECT_EQ(code_of(InputError("bad flag")), 2);
  EXPECT_EQ(code_of(RunError("peer died")), 1);
  EXPECT_EQ(code_of(IntegrityError("tag mismatch")), 3);
  EXPECT_EQ(code_of(CryptoError("EVP failed")), 1);  // not an attack signal
}

TEST(ErrorCategories, ForeignExceptionsAreRunFailures) {
  EXPECT_EQ(code_of(std::bad_alloc()), 1);
  EXPECT_EQ(code_of(std::runtime_error("a library's own error")), 1);
  EXPECT_EQ(code_of(std::invalid_argument("stoi")), 1);
}

TEST(ErrorCategories, CategorySurvivesCatchingByBase) {
  // Library code may catch an Error, add context and rethrow it: the category is part of the object.
  try {
    throw IntegrityError("chunk 3 of ckpt.safetensors: tag mismatch");
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(code_of(e), 3);
    EXPECT_STREQ(e.what(), "chunk 3 of ckpt.safetensors: tag mismatch");
  }
}

TEST(ErrorCategories, TypesStayDistinctForCatchSites) {
  // A site that catches InputError (to say "what to do") must not swallow an attack.
  bool caught_as_input = false;
  try {
    try {
      throw IntegrityError("replayed");
    } catch (const InputError&) {
      caught_as_input = true;
    }
  } catch (const IntegrityError&) {
  }
  EXPECT_FALSE(caught_as_input);
}

}  // namespace
}  // namespace tt
