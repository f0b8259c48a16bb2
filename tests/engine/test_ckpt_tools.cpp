// `teetrain ckpt inspect | verify | export` as library functions.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "engine/checkpoint/ckpt_tools.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/keys/key_file.h"
#include "tee/bytes.h"
#include "tee/crypto/sealed_file.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using enginetest::TempDir;
using enginetest::TinyRun;

struct Saved {
  TempDir dir;
  tee::MasterKey master = tee::MasterKey::random();
  tee::CheckpointKey key = derive_checkpoint_key(master);
  TinyRun run{31};
  fs::path sealed_step;
  fs::path plain_step;

  Saved() {
    auto sealed = make_sealed_codec(key, tee::Cipher::Aes128Gcm, 8192);
    CheckpointStore s1(dir / "sealed", 3, *sealed);
    s1.save(*run.backend, run.model, run.opt.get(), run.meta(3));
    sealed_step = s1.save(*run.backend, run.model, run.opt.get(), run.meta(4));
    auto plain = make_plain_codec();
    CheckpointStore s2(dir / "plain", 3, *plain);
    plain_step = s2.save(*run.backend, run.model, run.opt.get(), run.meta(4));
  }
};

TEST(CkptTools, InspectShowsSealedHeaderWithoutKeyAndNeverTheKey) {
  Saved s;
  const std::string text = inspect_checkpoint(s.dir / "sealed");
  EXPECT_NE(text.find("step_00000003"), std::string::npos) << text;
  EXPECT_NE(text.find("step_00000004"), std::string::npos) << text;
  EXPECT_NE(text.find("model.safetensors.sealed: sealed: TTSEAL01 v1, aes-128-gcm"), std::string::npos)
      << text;
  EXPECT_NE(text.find("key fingerprint " + tee::to_hex(tee::key_fingerprint(s.key.view()))),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"kind\":\"optimizer\""), std::string::npos) << text;
  EXPECT_NE(text.find("chunk 8192 B"), std::string::npos) << text;
  EXPECT_NE(text.find("completion marker (step 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("manifest.json.sealed: sealed"), std::string::npos) << text;
  for (const tee::SecretBytes* k : {&s.master.secret(), &s.key.secret()}) {
    EXPECT_EQ(text.find(tee::to_hex(k->view())), std::string::npos);
    EXPECT_EQ(text.find(tee::to_hex(k->view().first(8))), std::string::npos);
  }
  // With the key, the sealed state's step is shown too; the key still is not.
  const std::string keyed = inspect_checkpoint(s.sealed_step, &s.key);
  EXPECT_NE(keyed.find("step 4 (decrypted with the given key)"), std::string::npos) << keyed;
  EXPECT_NE(keyed.find("manifest of run "), std::string::npos) << keyed;
  EXPECT_NE(keyed.find("previous save step_00000003"), std::string::npos) << keyed;
  EXPECT_EQ(keyed.find(tee::to_hex(s.key.view())), std::string::npos);
  EXPECT_THROW(inspect_checkpoint(s.dir / "nothing"), InputError);
}

TEST(CkptTools, InspectPlainShowsTensorsAndStep) {
  Saved s;
  const std::string text = inspect_checkpoint(s.plain_step);
  EXPECT_NE(text.find("model.safetensors: plain safetensors"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(s.run.model.params().size()) + " tensors, " +
                      std::to_string(s.run.model.num_params()) + " values"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("state.json: plain, step 4"), std::string::npos) << text;
  EXPECT_NE(text.find("manifest.json: plain, manifest of run"), std::string::npos) << text;
  EXPECT_NE(text.find("previous save none (first of its run)"), std::string::npos) << text;
}

TEST(CkptTools, VerifyChecksEveryChunkAndCatchesAFlippedByte) {
  Saved s;
  const VerifyReport ok = verify_checkpoint(s.dir / "sealed", &s.key);
  EXPECT_EQ(ok.steps, 2);
  EXPECT_EQ(ok.files, 8);  // manifest, model, optimizer, state per step
  EXPECT_GT(ok.chunks, 6u);
  EXPECT_NE(ok.text.find("matches state.json"), std::string::npos) << ok.text;
  EXPECT_THROW(verify_checkpoint(s.sealed_step, nullptr), InputError);  // sealed needs the key
  // The master key in place of the checkpoint key does not compile; its bytes wrapped as one on
  // purpose still do not open the checkpoint.
  const tee::CheckpointKey master_bytes(s.master.secret().clone());
  EXPECT_THROW(verify_checkpoint(s.sealed_step, &master_bytes), IntegrityError);

  const fs::path f = s.sealed_step / "optimizer.safetensors.sealed";
  const tee::SealedHeader h = tee::read_sealed_header(f);
  ASSERT_GT(h.chunk_count(), 3u);
  enginetest::flip_byte(f, h.chunk_offset(3) + 17);
  try {
    verify_checkpoint(s.dir / "sealed", &s.key);
    FAIL() << "verify passed a flipped byte";
  } catch (const IntegrityError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("optimizer.safetensors.sealed"), std::string::npos) << what;
    EXPECT_NE(what.find("chunk 3"), std::string::npos) << what;
  }
}

TEST(CkptTools, VerifyPlainCatchesAFlippedParameterByDigest) {
  Saved s;
  EXPECT_EQ(verify_checkpoint(s.plain_step).steps, 1);
  const fs::path f = s.plain_step / "model.safetensors";
  enginetest::flip_byte(f, fs::file_size(f) - 5);
  try {
    verify_checkpoint(s.plain_step);
    FAIL();
  } catch (const IntegrityError& e) {  // the manifest's digest of the file catches it first
    EXPECT_NE(std::string(e.what()).find("model.safetensors: SHA-256 differs"), std::string::npos)
        << e.what();
  }
  // With the manifest re-listing the edited file (plain mode authenticates nothing), the parameter
  // digest in state.json still ties the model to the run state.
  const std::vector<char> mb = enginetest::read_all(f);
  const std::vector<std::uint8_t> model(mb.begin(), mb.end());
  const std::vector<char> text = enginetest::read_all(s.plain_step / "manifest.json");
  CheckpointManifest m = parse_manifest(std::vector<std::uint8_t>(text.begin(), text.end()), "manifest.json");
  for (ManifestFile& e : m.files) {
    if (e.name == "model.safetensors") e.sha256 = tee::to_hex(tee::sha256(model));
  }
  testing::write_bytes(s.plain_step / "manifest.json", encode_manifest(m));
  try {
    verify_checkpoint(s.plain_step);
    FAIL();
  } catch (const IntegrityError& e) {
    EXPECT_NE(std::string(e.what()).find("state.json records"), std::string::npos) << e.what();
  }
}

TEST(CkptTools, CheckpointWithoutManifestIsRefused) {
  Saved s;  // as a checkpoint written before manifests existed would be
  fs::remove(s.plain_step / "manifest.json");
  EXPECT_THROW(verify_checkpoint(s.plain_step), IntegrityError);
  EXPECT_THROW(export_safetensors(s.plain_step, nullptr, s.dir / "m.safetensors"), IntegrityError);
  EXPECT_THROW(verify_checkpoint(s.dir / "nothing"), InputError);
}

TEST(CkptTools, ExportWritesThePlainModelSafetensors) {
  Saved s;
  const fs::path out = s.dir / "export" / "model.safetensors";
  fs::create_directories(out.parent_path());
  EXPECT_THROW(export_safetensors(s.dir / "sealed", nullptr, out), InputError);
  EXPECT_FALSE(fs::exists(out));
  const ExportResult r = export_safetensors(s.dir / "sealed", &s.key, out);
  EXPECT_EQ(r.step_dir.filename(), "step_00000004");  // the newest complete step
  EXPECT_EQ(r.params, s.run.model.num_params());
  // Byte for byte the model file of a plain checkpoint of the same model.
  EXPECT_EQ(enginetest::read_all(out), enginetest::read_all(s.plain_step / "model.safetensors"));

  const std::vector<char> bytes = enginetest::read_all(out);
  const DecodedSafetensors st =
      safetensors_decode(std::as_bytes(std::span(bytes.data(), bytes.size())), out.string());
  EXPECT_EQ(st.metadata.at("format"), "pt");  // what safetensors.torch.load_file expects
  const std::vector<float> params = s.run.params();
  ASSERT_EQ(st.tensors.size(), s.run.model.params().size());
  for (const ParamInfo& p : s.run.model.params()) {
    const DecodedTensor& t = st.tensors.at(p.name);
    EXPECT_EQ(t.shape, p.shape) << p.name;
    ASSERT_EQ(t.data.size(), p.numel) << p.name;
    EXPECT_TRUE(
        std::equal(t.data.begin(), t.data.end(), params.begin() + static_cast<std::ptrdiff_t>(p.offset)))
        << p.name;
  }
  // A plain checkpoint exports without a key.
  const fs::path out2 = s.dir / "export" / "plain.safetensors";
  export_safetensors(s.plain_step, nullptr, out2);
  EXPECT_EQ(enginetest::read_all(out2), bytes);
}

}  // namespace
}  // namespace tt
