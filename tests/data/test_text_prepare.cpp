// prepare-text: document split, cleaning, outputs, idempotence, errors, and the real fortunes corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/text_prepare.h"
#include "data/token_shard.h"
#include "tests/common/temp_dir.h"

namespace tt {
namespace {

using tt::testing::read_bytes;
using tt::testing::TempDir;
using tt::testing::write_bytes;

std::string shard_text(const std::filesystem::path& p) {
  const TokenShard s = read_token_shard(p);
  EXPECT_EQ(s.recorded_vocab, kByteVocab);
  std::string text;
  for (const uint16_t t : s.tokens) text.push_back(static_cast<char>(t));
  return text;
}

// A corpus laid out like /usr/share/games/fortunes: text files, .dat indexes, .u8 symlinks.
void make_corpus(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  write_bytes(dir / "alpha", "one\n%\ntwo\n%\nthree \xc3\xa9\n%\n");
  write_bytes(dir / "beta", "four\n  line 2\n%\n\n%\nfive");  // blank document dropped, no final newline
  write_bytes(dir / "alpha.dat", std::string("\x00\x00\x00\x02\x00", 5));
  write_bytes(dir / ".hidden", "secret\n");
  write_bytes(dir / "image", std::string("PNG\x00\x01", 5));  // binary without a .dat name
  std::filesystem::create_symlink("alpha", dir / "alpha.u8");
}

TEST(TextPrepare, SplitsDocumentsDeterministically) {
  TempDir dir;
  make_corpus(dir / "corpus");
  PrepareTextOptions o;
  o.inputs = {dir / "corpus"};
  o.out_dir = dir / "out";
  o.name = "tiny";
  o.val_every = 2;
  const PrepareTextStats s = prepare_text(o);

  // Documents, in order: one, two(val), three, four(val), five.
  const std::string train = "one\n%\nthree \xc3\xa9\n%\nfive\n%\n";
  const std::string val = "two\n%\nfour\n  line 2\n%\n";
  EXPECT_EQ(shard_text(dir / "out" / "tiny_train.bin"), train);
  EXPECT_EQ(shard_text(dir / "out" / "tiny_val.bin"), val);
  EXPECT_EQ(s.sources,
            (std::vector<std::filesystem::path>{dir / "corpus" / "alpha", dir / "corpus" / "beta"}));
  EXPECT_EQ(s.documents, 5u);
  EXPECT_EQ(s.train_documents, 3u);
  EXPECT_EQ(s.val_documents, 2u);
  EXPECT_EQ(s.train_tokens, train.size());
  EXPECT_EQ(s.val_tokens, val.size());
  EXPECT_EQ(s.train_path, dir / "out" / "tiny_train.bin");
  EXPECT_EQ(s.val_path, dir / "out" / "tiny_val.bin");

  const std::string manifest = read_bytes(s.manifest_path);
  EXPECT_NE(manifest.find("\"vocab\": 256"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"val_every\": 2"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find((dir / "corpus" / "beta").string()), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"train\": " + std::to_string(train.size())), std::string::npos) << manifest;
}

TEST(TextPrepare, IdempotentAndAtomic) {
  TempDir dir;
  make_corpus(dir / "corpus");
  PrepareTextOptions o;
  o.inputs = {dir / "corpus"};
  o.out_dir = dir / "out";
  prepare_text(o);
  const std::string first = read_bytes(dir / "out" / "fortunes_train.bin");
  write_bytes(dir / "out" / "fortunes_val.bin", "garbage");  // a stale or damaged output is replaced
  prepare_text(o);
  EXPECT_EQ(read_bytes(dir / "out" / "fortunes_train.bin"), first);
  EXPECT_NO_THROW(read_token_shard(dir / "out" / "fortunes_val.bin"));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out"))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"fortunes_manifest.json", "fortunes_train.bin", "fortunes_val.bin"}));
}

TEST(TextPrepare, ExplicitFilesAreReadInGivenOrder) {
  TempDir dir;
  make_corpus(dir / "corpus");
  PrepareTextOptions o;
  o.inputs = {dir / "corpus" / "beta", dir / "corpus" / "alpha.u8"};  // a named symlink is followed
  o.out_dir = dir / "out";
  o.val_every = 100;
  const auto s = prepare_text(o);
  EXPECT_EQ(s.documents, 5u);
  EXPECT_EQ(s.val_documents, 0u);
  EXPECT_EQ(shard_text(s.train_path), "four\n  line 2\n%\nfive\n%\none\n%\ntwo\n%\nthree \xc3\xa9\n%\n");
  EXPECT_TRUE(read_token_shard(s.val_path).tokens.empty());
}

TEST(TextPrepare, ResolvesOverstrike) {
  EXPECT_EQ(resolve_overstrike("plain\ttext\n"), "plain\ttext\n");
  EXPECT_EQ(resolve_overstrike("An _\bI here\n"), "An I here\n");
  EXPECT_EQ(resolve_overstrike("*____\b\b\b\bonly* ones\n"), "*only* ones\n");
  EXPECT_EQ(resolve_overstrike("_\b\xc3\xa9!\n"), "\xc3\xa9!\n");  // a UTF-8 character is one cell
  EXPECT_EQ(resolve_overstrike("\xc3\xa9\bx\n"), "x\n");           // backspace over a UTF-8 character
  EXPECT_EQ(resolve_overstrike("\b\bab\ncd"), "ab\ncd");           // backspace at line start is ignored
}

TEST(TextPrepare, Errors) {
  TempDir dir;
  PrepareTextOptions o;
  o.out_dir = dir / "out";
  o.inputs = {dir / "missing.txt"};
  try {
    prepare_text(o);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir / "empty");
  write_bytes(dir / "empty" / "x.dat", "index");
  o.inputs = {dir / "empty"};
  try {
    prepare_text(o);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no text found"), std::string::npos) << e.what();
  }
  write_bytes(dir / "bin", std::string("a\x00b", 3));
  o.inputs = {dir / "bin"};
  EXPECT_THROW(prepare_text(o), InputError);
  write_bytes(dir / "ok", "text\n");
  o.inputs = {dir / "ok"};
  o.val_every = 1;
  EXPECT_THROW(prepare_text(o), InputError);
  o.val_every = 20;
  o.name = "a/b";
  EXPECT_THROW(prepare_text(o), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "fortunes_train.bin"));
}

// The real default corpus (Debian's `fortunes`, ~2.5 MB): every text file, ~5% of documents to val.
TEST(TextPrepare, DefaultFortunesCorpus) {
  if (!std::filesystem::is_directory(kFortunesDir)) GTEST_SKIP() << "fortunes package not installed";
  TempDir dir;
  PrepareTextOptions o;
  o.out_dir = dir.path();
  const auto s = prepare_text(o);
  EXPECT_GT(s.sources.size(), 20u);
  for (const auto& src : s.sources) {
    EXPECT_NE(src.extension(), ".dat");
    EXPECT_NE(src.extension(), ".u8");
  }
  EXPECT_GT(s.train_tokens, 2'000'000u);
  const double val_frac = static_cast<double>(s.val_documents) / static_cast<double>(s.documents);
  EXPECT_NEAR(val_frac, 0.05, 0.001);
  const std::string train = shard_text(s.train_path);
  EXPECT_EQ(train.find('\b'), std::string::npos);  // overstrikes resolved
  EXPECT_EQ(train.find('\0'), std::string::npos);
}

}  // namespace
}  // namespace tt
