// Fuzz-style tests of the data parsers of untrusted bytes: token shard headers (plain and inside a
// sealed file), idx and CIFAR-10 image files (plain and gzip, with the decompression cap), and the
// sealed metadata JSON of token shards and image sets. Every input ends in success, InputError or
// IntegrityError: never a crash, a hang, a sanitizer report or another exception type.
// Deterministic seeds; each test runs in well under 10 s (also under ASan/UBSan).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/image_dataset.h"
#include "data/sealed_images.h"
#include "data/sealed_tokens.h"
#include "data/token_shard.h"
#include "tee/errors.h"
#include "tests/common/fuzz.h"
#include "tests/common/temp_dir.h"
#include "tests/data/data_test_util.h"

namespace tt {
namespace {

using datatest::be32;

namespace fs = std::filesystem;
using tt::testing::fuzz_inputs;
using tt::testing::FuzzDir;
using tt::testing::FuzzPlan;
using tt::testing::read_bytes;
using tt::testing::run_parser;
using tt::testing::write_bytes;

std::string gzip(const std::string& bytes) {
  uLongf size = compressBound(static_cast<uLong>(bytes.size())) + 32;
  std::string out(size, '\0');
  z_stream z{};
  // windowBits 15 + 16: a gzip (not zlib) stream, as gzread expects from .gz files.
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Runs `parse` on each input (written to `file` first); counts the outcomes so a test can check that
// the inputs exercised both acceptance and refusal.
template <typename F>
std::map<int, int> fuzz_file(const fs::path& file, const std::vector<tt::testing::FuzzInput>& inputs,
                             F&& parse) {
  std::map<int, int> outcomes;
  for (const auto& in : inputs) {
    write_bytes(file, in.bytes);
    ++outcomes[run_parser(parse, file.filename().string() + " " + in.what)];
  }
  EXPECT_EQ(outcomes.count(-1), 0u);
  return outcomes;
}

std::string valid_shard(const fs::path& dir) {
  std::vector<uint16_t> tokens(100);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(i * 7 % 256);
  write_token_shard(dir / "v_train.bin", tokens, 256);
  return read_bytes(dir / "v_train.bin");
}

TEST(ParserFuzz, TokenShardHeader) {
  FuzzDir dir;
  const std::string valid = valid_shard(dir.path());
  FuzzPlan plan;
  plan.truncate_upto = valid.size();  // every length
  auto inputs = fuzz_inputs(valid, plan);
  // Header fields set to extreme values.
  for (const std::size_t field : {0, 4, 8, 12}) {
    for (const uint32_t v : {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu, 65536u, 65537u}) {
      std::string s = valid;
      for (int b = 0; b < 4; ++b) s[field + static_cast<std::size_t>(b)] = static_cast<char>(v >> (8 * b));
      inputs.push_back({"field " + std::to_string(field) + " := " + std::to_string(v), s});
    }
  }
  const auto outcomes =
      fuzz_file(dir / "f_train.bin", inputs, [&] { read_token_shard(dir / "f_train.bin"); });
  EXPECT_GT(outcomes.at(0), 0);  // flips in the zero padding are harmless
  EXPECT_GT(outcomes.at(2), 0);
  EXPECT_EQ(outcomes.count(3), 0u);
}

// Idx image and label files and CIFAR-10 batches, plain and gzipped.
TEST(ParserFuzz, IdxAndCifarImages) {
  FuzzDir dir;
  std::string images = be32(0x803) + be32(5) + be32(4) + be32(4);
  for (int i = 0; i < 5 * 16; ++i) images.push_back(static_cast<char>(i * 3));
  std::string labels = be32(0x801) + be32(5);
  for (int i = 0; i < 5; ++i) labels.push_back(static_cast<char>(i));
  write_bytes(dir / "good-images", images);
  write_bytes(dir / "good-labels", labels);
  FuzzPlan plan;
  plan.random_buffers = 50;
  const fs::path f = dir / "fuzzed";
  auto o = fuzz_file(f, fuzz_inputs(images, plan), [&] { read_idx(f, dir / "good-labels"); });
  EXPECT_GT(o.at(2), 0);
  o = fuzz_file(f, fuzz_inputs(labels, plan), [&] { read_idx(dir / "good-images", f); });
  EXPECT_GT(o.at(2), 0);
  plan.flip_all_bits_upto = 40;  // the gzip header and the start of the deflate stream
  o = fuzz_file(f, fuzz_inputs(gzip(images), plan), [&] { read_idx(f, dir / "good-labels"); });
  EXPECT_GT(o.at(2), 0);
  std::string cifar;
  for (int r = 0; r < 3; ++r) {
    cifar.push_back(static_cast<char>(r));
    for (int k = 0; k < 3 * 32 * 32; ++k) cifar.push_back(static_cast<char>(k * r));
  }
  plan.random_buffers = 20;
  o = fuzz_file(f, fuzz_inputs(cifar, plan), [&] { read_cifar10({f}); });
  EXPECT_GT(o.at(2), 0);
  o = fuzz_file(f, fuzz_inputs(gzip(cifar), plan), [&] { read_cifar10({f}); });
  EXPECT_GT(o.at(2), 0);
}

using datatest::expect_input_error;

// A gzip file expanding far beyond what its idx header describes, and a header describing more than
// any image file may hold: refused after reading about as much as the header describes.
TEST(ParserFuzz, GzipDecompressionIsCapped) {
  FuzzDir dir;
  std::string labels = be32(0x801) + be32(5) + std::string(5, '\1');
  write_bytes(dir / "labels", labels);
  std::string bomb = be32(0x803) + be32(5) + be32(4) + be32(4) + std::string(64u << 20, '\0');  // 64 MiB
  write_bytes(dir / "bomb.gz", gzip(bomb));
  bomb.clear();
  EXPECT_LT(fs::file_size(dir / "bomb.gz"), 1u << 20);
  expect_input_error([&] { read_idx(dir / "bomb.gz", dir / "labels"); }, "holds more than the 96 bytes");
  write_bytes(dir / "huge.gz", gzip(be32(0x803) + be32(0xffffffffu) + be32(4096) + be32(4096)));
  expect_input_error([&] { read_idx(dir / "huge.gz", dir / "labels"); }, "more than the 2 GiB");
  // Trailing bytes after a plain label file are refused too (the same cap).
  write_bytes(dir / "long-labels", labels + "xyz");
  write_bytes(dir / "images", be32(0x803) + be32(5) + be32(4) + be32(4) + std::string(80, '\7'));
  expect_input_error([&] { read_idx(dir / "images", dir / "long-labels"); },
                     "long-labels: holds more than the 13");
  EXPECT_EQ(read_idx(dir / "images", dir / "labels").size(), 5u);
}

// ---- sealed metadata ----

// Every way of mangling one field of a metadata object: other JSON types and out-of-range values.
std::vector<nlohmann::ordered_json> mangled_values() {
  return {nullptr,
          true,
          -1,
          0,
          1,
          3,
          1.5,
          -0.0,
          1e300,
          "",
          "x",
          std::string(5000, 'a'),
          nlohmann::ordered_json::array(),
          nlohmann::ordered_json::object(),
          {1, 2, 3},
          18446744073709551615ull,
          9223372036854775807ll,
          "0123456789abcdef0123456789abcdef"};
}

// Metadata texts derived from a valid one: each field replaced by each mangled value or removed,
// random flips of its characters, every truncation, non-objects and deep nesting.
std::vector<std::pair<std::string, std::string>> mangled_metadata(const std::string& valid) {
  std::vector<std::pair<std::string, std::string>> out;
  const nlohmann::ordered_json base = nlohmann::ordered_json::parse(valid);
  for (auto it = base.begin(); it != base.end(); ++it) {
    for (const auto& v : mangled_values()) {
      nlohmann::ordered_json j = base;
      j[it.key()] = v;
      out.emplace_back(it.key() + " := " + v.dump().substr(0, 40), j.dump());
    }
    nlohmann::ordered_json j = base;
    j.erase(it.key());
    out.emplace_back("without " + it.key(), j.dump());
  }
  FuzzPlan plan;
  plan.truncate_upto = valid.size();
  plan.flip_all_bits_upto = 0;
  plan.random_buffers = 30;
  plan.seed = 7;
  for (auto& in : fuzz_inputs(valid, plan)) out.emplace_back(in.what, in.bytes);
  for (const char* s :
       {"[]", "\"kind\"", "42", "null", "{}", "{\"kind\":\"token-shard\"}", "{\"kind\":\"image-set\"}"})
    out.emplace_back(s, s);
  out.emplace_back("deep nesting", std::string(100000, '[') + std::string(100000, ']'));
  out.emplace_back("deep object", std::string(50000, '{') + "}");
  return out;
}

// Seals `plaintext` under `metadata` and opens it with `open`; returns the outcome.
template <typename F>
int open_with_metadata(const fs::path& file, const tee::DatasetKey& key,
                       const std::vector<std::uint8_t>& plaintext, const std::string& metadata,
                       const std::string& what, F&& open) {
  tee::SealOptions opts;
  opts.chunk_size = 512;
  opts.metadata = metadata;
  tee::write_sealed_file(file, key, plaintext, opts);
  return run_parser(open, what);
}

TEST(ParserFuzz, SealedTokenShardMetadataAndHeader) {
  FuzzDir dir;
  const auto key = tee::DatasetKey::random();
  valid_shard(dir.path());
  const auto infos = seal_token_shards({dir / "v_train.bin"}, dir / "s", key, tee::Cipher::Aes256Gcm, 512);
  const fs::path sealed = infos.at(0).output;
  const std::string meta = tee::read_sealed_header(sealed).metadata;
  const auto plain = tee::read_sealed_file(sealed, key);
  const fs::path f = dir / "m_train.bin.sealed";
  std::map<int, int> outcomes;
  for (const auto& [what, text] : mangled_metadata(meta)) {
    const int r =
        open_with_metadata(f, key, plain, text, what, [&] { SealedTokenDataset({f}, "train", key); });
    ++outcomes[r];
    // Every field is checked: a mangled or removed field is refused, except another name string or
    // another well-formed dataset id (a one-file split is then simply another dataset).
    const bool structured = what.find(" := ") != std::string::npos || what.rfind("without ", 0) == 0;
    const bool benign = what.rfind("name := \"", 0) == 0 || what.rfind("dataset := \"0123", 0) == 0;
    if (structured && !benign && text != meta) {
      EXPECT_NE(r, 0) << what << ": " << text.substr(0, 200);
    }
  }
  EXPECT_GT(outcomes[2], 0);
  EXPECT_GT(outcomes[3], 0);
  // The shard header inside the (authentic) plaintext: truncations and flips of its fields.
  FuzzPlan plan;
  plan.truncate_upto = 1100;
  plan.flip_all_bits_upto = 16;
  plan.random_flips = 30;
  plan.random_overwrites = 30;
  plan.random_buffers = 20;
  const std::string valid(plain.begin(), plain.end());
  for (const auto& in : fuzz_inputs(valid, plan)) {
    const std::vector<std::uint8_t> bytes(in.bytes.begin(), in.bytes.end());
    const int r = open_with_metadata(f, key, bytes, meta, in.what, [&] {
      SealedTokenDataset d({f}, "train", key);
      SealedTokenLoader l(d, 8, 1, true);
      Batch b;
      l.fill(b, 0, 4);
    });
    EXPECT_GE(r, 0);
  }
}

TEST(ParserFuzz, SealedImageSetMetadata) {
  FuzzDir dir;
  const auto key = tee::DatasetKey::random();
  ImageSet s;
  s.source = "fuzz";
  s.C = 2;
  s.H = s.W = 3;
  for (int i = 0; i < 6; ++i) {
    s.labels.push_back(i % 10);
    for (int k = 0; k < 18; ++k) s.pixels.push_back(static_cast<uint8_t>(i * k));
  }
  const SealedImageDataset d = seal_image_dataset(s, s, dir / "s", "fz", key, tee::Cipher::Aes256Gcm, 64);
  const std::string meta = tee::read_sealed_header(d.train.file).metadata;
  const auto plain = tee::read_sealed_file(d.train.file, key);
  const fs::path f = dir / "m_train.images.sealed";
  std::map<int, int> outcomes;
  for (const auto& [what, text] : mangled_metadata(meta)) {
    const int r = open_with_metadata(f, key, plain, text, what, [&] {
      SealedImageSet set(f, "train", key);
      SealedImageLoader l(set, set.info().transform(), 1, true);
      Batch b;
      l.fill(b, 0, 3);
    });
    ++outcomes[r];
    // The clear view (no key) parses the same text: the same rule, no crash.
    run_parser([&] { read_sealed_image_info(f); }, what + " (clear view)");
  }
  EXPECT_GT(outcomes[0], 0);  // e.g. another source string
  EXPECT_GT(outcomes[2], 0);
  EXPECT_GT(outcomes[3], 0);
}

}  // namespace
}  // namespace tt
