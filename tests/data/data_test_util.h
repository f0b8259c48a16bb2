// Shared helpers for the data/ tests.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/rng.h"
#include "data/sealed_ingress.h"
#include "data/token_shard.h"

namespace tt::datatest {

// v as 4 big-endian bytes, as the idx (MNIST) headers hold their fields.
inline std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A byte-level shard (vocabulary 256) of n random tokens, so windows are distinguishable.
inline void write_random_shard(const std::filesystem::path& p, int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<uint16_t>(rng.below(256));
  write_token_shard(p, t, 256);
}

// `f` throws a one-line InputError whose message contains `needle`.
template <typename F>
void expect_input_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no InputError (wanted one mentioning '" << needle << "')";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

// The host who owns the bounce buffer's memory: flips the top bit of byte `byte` of message `message`
// (counted from 0) after the CPU side sealed it and before the device side opens it.
class TamperingBounceBuffer final : public BounceBuffer {
 public:
  TamperingBounceBuffer(std::uint64_t message, std::size_t byte) : message_(message), byte_(byte) {}
  tee::MutableByteView stage(std::size_t bytes) override {
    bytes_.resize(bytes);
    return bytes_;
  }
  tee::ByteView collect() override {
    if (collected_++ == message_) bytes_.at(byte_) ^= 0x80;
    return bytes_;
  }

 private:
  std::uint64_t message_;
  std::size_t byte_;
  std::uint64_t collected_ = 0;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace tt::datatest
