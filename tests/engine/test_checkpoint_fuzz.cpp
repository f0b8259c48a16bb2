// The JSON files of a checkpoint (state.json, the manifest) and the freshness record are parsed from
// untrusted bytes: random bytes, truncations, flipped bytes and type-mangled fields must give
// IntegrityError or InputError -- never another exception, a crash or undefined behaviour
// (this test is meant to run under the asan preset too).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/freshness.h"
#include "engine/keys/key_file.h"
#include "tee/crypto/sealed_file.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using enginetest::TempDir;
using enginetest::TinyRun;

Bytes bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

// Accepting is allowed (a mutation may leave a valid document); failing any other way is not.
void expect_clean(const std::function<void()>& f, const std::string& what) {
  try {
    f();
  } catch (const IntegrityError&) {
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception: " << e.what();
  }
}

// Every document derived from `valid`: random bytes, every truncation, byte flips, and every
// top-level (and files[0]) field replaced by a value of the wrong type or range, or removed.
std::vector<Bytes> mutations(const std::string& valid, std::uint32_t seed) {
  std::vector<Bytes> out = {bytes_of(valid)};
  std::mt19937 rng(seed);
  const std::string alphabet = "{}[]\":,0123456789.-+eE truefalsnul\\x";
  for (int i = 0; i < 300; ++i) {
    Bytes b(rng() % 200);
    for (auto& c : b) c = static_cast<std::uint8_t>(i % 2 ? rng() : alphabet[rng() % alphabet.size()]);
    out.push_back(b);
  }
  for (std::size_t n = 0; n < valid.size(); ++n) out.push_back(bytes_of(valid.substr(0, n)));
  for (std::size_t at = 0; at < valid.size(); at += 3) {
    std::string s = valid;
    s[at] = alphabet[rng() % alphabet.size()];
    out.push_back(bytes_of(s));
  }
  const std::vector<std::string> tokens = {"null",
                                           "true",
                                           "\"x\"",
                                           "-1",
                                           "-9223372036854775809",
                                           "1.5",
                                           "1e300",
                                           "1e400",
                                           "18446744073709551615",
                                           "18446744073709551616",
                                           "99999999999999999999999999",
                                           "[]",
                                           "{}",
                                           "\"" + std::string(100000, 'f') + "\"",
                                           std::string(20000, '[') + std::string(20000, ']')};
  const nlohmann::json doc = nlohmann::json::parse(valid);
  auto mangle = [&](const nlohmann::json::json_pointer& ptr) {
    nlohmann::json gone = doc;
    nlohmann::json& parent = gone.at(ptr.parent_pointer());
    if (parent.is_array())
      parent.erase(std::stoul(ptr.back()));
    else
      parent.erase(ptr.back());
    out.push_back(bytes_of(gone.dump()));
    for (const std::string& t : tokens) {
      nlohmann::json d = doc;
      d[ptr] = "@@MANGLE@@";
      std::string text = d.dump();
      text.replace(text.find("\"@@MANGLE@@\""), 12, t);
      out.push_back(bytes_of(text));
    }
  };
  for (const auto& [k, v] : doc.items()) mangle(nlohmann::json::json_pointer("/" + k));
  if (doc.contains("files")) {
    for (const auto& [k, v] : doc["files"][0].items()) mangle(nlohmann::json::json_pointer("/files/0/" + k));
  }
  if (doc.contains("layout")) {  // a sharded manifest: its layout's fields and a range's parts too
    for (const auto& [k, v] : doc["layout"].items()) mangle(nlohmann::json::json_pointer("/layout/" + k));
    for (const char* p :
         {"/layout/shards/0", "/layout/shards/1/0", "/layout/shards/2/1/0", "/layout/shards/2/1/1"})
      mangle(nlohmann::json::json_pointer(p));
  }
  return out;
}

struct PlainCheckpoint {
  TempDir tmp;
  TinyRun run{17};
  std::unique_ptr<FileCodec> codec = make_plain_codec();
  fs::path dir;
  std::string state_text, manifest_text;

  PlainCheckpoint() {
    CheckpointStore s(tmp / "ck", 2, *codec);
    s.save(*run.backend, run.model, run.opt.get(), run.meta(2));
    dir = s.save(*run.backend, run.model, run.opt.get(), run.meta(3));
    const auto st = enginetest::read_all(dir / "state.json");
    const auto mf = enginetest::read_all(dir / "manifest.json");
    state_text.assign(st.begin(), st.end());
    manifest_text.assign(mf.begin(), mf.end());
  }
  // Replaces state.json and re-lists it in the manifest, so the parser itself is what is reached.
  void put_state(const Bytes& b) {
    testing::write_bytes(dir / "state.json", std::string(b.begin(), b.end()));
    CheckpointManifest m = parse_manifest(bytes_of(manifest_text), "manifest.json");
    for (ManifestFile& f : m.files) {
      if (f.name == "state.json") f = {f.name, b.size(), tee::to_hex(tee::sha256(b))};
    }
    testing::write_bytes(dir / "manifest.json", encode_manifest(m));
  }
};

TEST(CheckpointFuzz, StateJsonParserOnlyThrowsOurErrors) {
  PlainCheckpoint c;
  int parsed = 0;
  for (const Bytes& b : mutations(c.state_text, 1)) {
    expect_clean(
        [&] {
          parse_checkpoint_state(b, "state.json");
          ++parsed;
        },
        "state.json");
  }
  EXPECT_GT(parsed, 0);  // the untouched prefix/flip cases that stay valid do parse
}

TEST(CheckpointFuzz, ManifestParserOnlyThrowsOurErrors) {
  PlainCheckpoint c;
  for (const Bytes& b : mutations(c.manifest_text, 2)) {
    expect_clean([&] { parse_manifest(b, "manifest.json"); }, "manifest.json");
  }
}

// A sharded checkpoint's manifest: 3 ranks, unequal shards of 2 buckets (Note [Shard layout]).
CheckpointManifest sharded_manifest() {
  CheckpointManifest m{new_run_id(), 4, step_dir_name(4), std::nullopt, std::nullopt, {}, std::nullopt};
  m.layout = ShardLayout{.world = 3,
                         .stage = ShardStage::Optimizer,
                         .params = 100,
                         .shards = {{{.offset = 0, .count = 20}, {.offset = 60, .count = 14}},
                                    {{.offset = 20, .count = 20}, {.offset = 74, .count = 13}},
                                    {{.offset = 40, .count = 20}, {.offset = 87, .count = 13}}}};
  const std::string digest(64, 'a');
  for (const std::string& name : {std::string(kModelFile), std::string(kStateFile), optimizer_shard_file(0),
                                  optimizer_shard_file(1), optimizer_shard_file(2)})
    m.files.push_back({name, 10, digest});
  return m;
}

TEST(CheckpointFuzz, ShardedManifestParserOnlyThrowsOurErrors) {
  const std::string valid = encode_manifest(sharded_manifest());
  const CheckpointManifest back = parse_manifest(bytes_of(valid), "manifest.json");
  ASSERT_TRUE(back.layout.has_value());
  EXPECT_EQ(back.layout->floats(2), 33u);
  EXPECT_EQ(back.layout->stage, ShardStage::Optimizer);
  int parsed = 0;
  for (const Bytes& b : mutations(valid, 6)) {
    expect_clean(
        [&] {
          parse_manifest(b, "manifest.json");
          ++parsed;
        },
        "sharded manifest.json");
  }
  EXPECT_GT(parsed, 0);
  // What no mutation above is sure to reach: layouts that do not tile the parameters, files that do
  // not match the layout.
  auto refused = [](CheckpointManifest m) {
    EXPECT_THROW(parse_manifest(bytes_of(encode_manifest(m)), "manifest.json"), IntegrityError);
  };
  CheckpointManifest m = sharded_manifest();
  m.layout->shards[1][0].offset = 19;  // overlaps rank 0's first range
  refused(m);
  m = sharded_manifest();
  m.layout->params = 101;  // a float in no shard
  refused(m);
  m = sharded_manifest();
  m.layout->world = 2;  // three shards listed
  refused(m);
  m = sharded_manifest();
  m.files.pop_back();  // rank 2's shard not listed
  refused(m);
  m = sharded_manifest();
  m.files.push_back({optimizer_shard_file(3), 10, std::string(64, 'a')});  // a rank beyond the world
  refused(m);
  m = sharded_manifest();
  m.files.push_back({kOptimizerFile, 10, std::string(64, 'a')});  // the whole optimizer beside shards
  refused(m);
  m = sharded_manifest();
  m.layout.reset();  // shards without a layout
  refused(m);
}

TEST(CheckpointFuzz, ShardReportParserOnlyThrowsOurErrors) {
  const std::string valid = encode_manifest_file({optimizer_shard_file(1), 123, std::string(64, 'b')});
  EXPECT_EQ(parse_manifest_file(bytes_of(valid), "report").size, 123u);
  for (const Bytes& b : mutations(valid, 7))
    expect_clean([&] { parse_manifest_file(b, "report"); }, "shard report");
  for (const char* name : {"model.safetensors", "optimizer.rank01.safetensors", "optimizer.rank.safetensors",
                           "../optimizer.rank1.safetensors", "optimizer.rank999999.safetensors"})
    EXPECT_THROW(
        parse_manifest_file(bytes_of(encode_manifest_file({name, 1, std::string(64, 'b')})), "report"),
        IntegrityError)
        << name;
}

TEST(CheckpointFuzz, MangledFilesThroughTheVerifiedReadPath) {
  PlainCheckpoint c;
  const std::vector<Bytes> states = mutations(c.state_text, 3);
  for (std::size_t i = 0; i < states.size(); i += 7) {  // a sample: each case writes two files
    c.put_state(states[i]);
    expect_clean([&] { CheckpointStore::read_meta(c.dir, *c.codec); }, "state.json via read_meta");
  }
  c.put_state(bytes_of(c.state_text));
  const std::vector<Bytes> manifests = mutations(c.manifest_text, 4);
  for (std::size_t i = 0; i < manifests.size(); i += 5) {
    testing::write_bytes(c.dir / "manifest.json", std::string(manifests[i].begin(), manifests[i].end()));
    expect_clean([&] { open_verified_checkpoint(c.dir, nullptr); },
                 "manifest.json via open_verified_checkpoint");
  }
  // Huge files never get read whole: a manifest over its bound is refused by its size.
  testing::write_bytes(c.dir / "manifest.json", std::string((1 << 20) + 1, ' '));
  EXPECT_THROW(open_verified_checkpoint(c.dir, nullptr), IntegrityError);
}

TEST(CheckpointFuzz, FreshnessRecordParserOnlyThrowsOurErrors) {
  TempDir tmp;
  const tee::MasterKey master = tee::MasterKey::random();
  FreshnessRecord record(tmp / "k.freshness", master);
  const std::string run = new_run_id();
  record.record(run, 7, std::string(64, 'c'));
  const std::vector<std::uint8_t> valid =
      tee::read_sealed_file(record.path(), tee::derive_freshness_key(master));
  const tee::FreshnessKey key = tee::derive_freshness_key(master);
  const std::vector<Bytes> docs = mutations(std::string(valid.begin(), valid.end()), 5);
  for (std::size_t i = 0; i < docs.size(); i += 3) {
    tee::write_sealed_file(record.path(), key, docs[i]);  // authentic bytes, malformed content
    expect_clean([&] { record.newest(run); }, "freshness record");
  }
}

}  // namespace
}  // namespace tt
