// An attacker who controls the checkpoint directory: every manipulation is refused by BOTH the
// resume path (CheckpointStore::load) and `ckpt verify` (verify_checkpoint) with a
// IntegrityError naming the file; an untouched checkpoint resumes bit for bit.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/ckpt_tools.h"
#include "engine/checkpoint/freshness.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/keys/key_file.h"
#include "engine/param_chunks.h"
#include "models/resnet/resnet.h"
#include "tee/crypto/sealed_file.h"
#include "tee/errors.h"
#include "tests/engine/engine_test_util.h"

namespace tt {
namespace {

namespace fs = std::filesystem;
using enginetest::TempDir;
using enginetest::TinyRun;

// Three saves (steps 1, 2, 3) of one lineage, sealed and recorded in a freshness record, and the
// same three as a plain checkpoint root.
struct Saved {
  TempDir tmp;
  tee::MasterKey master = tee::MasterKey::random();
  tee::CheckpointKey key = derive_checkpoint_key(master);
  std::unique_ptr<FileCodec> sealed = make_sealed_codec(key, tee::Cipher::Aes256Gcm, 4096);
  std::unique_ptr<FileCodec> plain = make_plain_codec();
  FreshnessRecord record{tmp / "master.key.freshness", master};
  TinyRun run{41};
  fs::path root = tmp / "sealed";
  fs::path plain_root = tmp / "plain";

  Saved() {
    CheckpointStore s(root, 5, *sealed, &record);
    CheckpointStore p(plain_root, 5, *plain);
    for (long step = 1; step <= 3; ++step) {
      run.opt->step(run.model, 1e-3f, 1.0f, step + 1);  // each step's state differs
      s.save(*run.backend, run.model, run.opt.get(), run.meta(step));
      p.save(*run.backend, run.model, run.opt.get(), run.meta(step));
    }
  }
  fs::path step(long n) const { return root / step_dir_name(n); }
  fs::path plain_step(long n) const { return plain_root / step_dir_name(n); }
};

// The message of the IntegrityError `f` throws; a test failure if it throws anything else or
// nothing.
std::string integrity_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const IntegrityError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an IntegrityError: " << e.what();
    return "(wrong type)";
  }
  ADD_FAILURE() << "accepted";
  return "(accepted)";
}

// The resume path, as `teetrain train --resume PATH` runs it on rank 0 (with the record in TEE mode).
CheckpointMeta resume(const fs::path& path, FileCodec& codec, const FreshnessRecord* record) {
  TinyRun fresh(5, /*step=*/false);
  return CheckpointStore::load(CheckpointStore::resolve(path), codec, *fresh.backend, fresh.model,
                               fresh.opt.get(), record);
}

// Resume and verify both refuse `path` with an IntegrityError naming `needle`.
void expect_refused(const fs::path& path, FileCodec& codec, const tee::CheckpointKey* key,
                    const FreshnessRecord* record, const std::string& needle) {
  const std::string r = integrity_error([&] { resume(path, codec, record); });
  EXPECT_NE(r.find(needle), std::string::npos) << "resume: " << r;
  const std::string v = integrity_error([&] { verify_checkpoint(path, key, record); });
  EXPECT_NE(v.find(needle), std::string::npos) << "verify: " << v;
}
void expect_sealed_refused(Saved& s, const fs::path& path, const std::string& needle) {
  expect_refused(path, *s.sealed, &s.key, &s.record, needle);
}
void expect_plain_refused(Saved& s, const fs::path& path, const std::string& needle) {
  expect_refused(path, *s.plain, nullptr, nullptr, needle);
}

void copy_over(const fs::path& from, const fs::path& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

TEST(CheckpointAttacks, UntouchedCheckpointResumesBitExactlyAndVerifies) {
  Saved s;
  for (FileCodec* codec : {s.sealed.get(), s.plain.get()}) {
    TinyRun fresh(5, /*step=*/false);
    const fs::path root = codec == s.sealed.get() ? s.root : s.plain_root;
    const CheckpointMeta m = CheckpointStore::load(CheckpointStore::resolve(root), *codec, *fresh.backend,
                                                   fresh.model, fresh.opt.get(), &s.record);
    EXPECT_EQ(m.step, 3);
    EXPECT_EQ(fresh.params(), s.run.params());
    EXPECT_EQ(fresh.opt_state(), s.run.opt_state());
  }
  const VerifyReport r = verify_checkpoint(s.root, &s.key, &s.record);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.files, 12);  // manifest, model, optimizer, state per step
  EXPECT_NE(r.text.find("chain: first save of run"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("chain: follows step_00000002"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("freshness: the newest save of this run the record has seen"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("freshness: superseded"), std::string::npos) << r.text;
  const VerifyReport p = verify_checkpoint(s.plain_root);
  EXPECT_EQ(p.steps, 3);
  EXPECT_NE(p.text.find("freshness: not checked"), std::string::npos) << p.text;
}

TEST(CheckpointAttacks, ModelFileFromAnotherStep) {
  Saved s;
  copy_over(s.step(1) / "model.safetensors.sealed", s.step(3) / "model.safetensors.sealed");
  expect_sealed_refused(s, s.step(3), "step_00000003/model.safetensors.sealed");
  copy_over(s.plain_step(1) / "model.safetensors", s.plain_step(3) / "model.safetensors");
  expect_plain_refused(s, s.plain_step(3), "step_00000003/model.safetensors");
}

TEST(CheckpointAttacks, OptimizerStateFromAnotherStep) {
  Saved s;
  copy_over(s.step(2) / "optimizer.safetensors.sealed", s.step(3) / "optimizer.safetensors.sealed");
  expect_sealed_refused(s, s.root, "step_00000003/optimizer.safetensors.sealed");
  copy_over(s.plain_step(2) / "optimizer.safetensors", s.plain_step(3) / "optimizer.safetensors");
  expect_plain_refused(s, s.plain_root, "step_00000003/optimizer.safetensors");
}

TEST(CheckpointAttacks, OlderStepRenamedToANewerName) {
  Saved s;
  for (const fs::path& root : {s.root, s.plain_root}) {
    fs::remove_all(root / step_dir_name(3));
    fs::remove_all(root / step_dir_name(2));
    fs::rename(root / step_dir_name(1), root / step_dir_name(3));
  }
  expect_sealed_refused(s, s.root, "written for step_00000001 but the directory is step_00000003");
  expect_plain_refused(s, s.plain_root, "written for step_00000001 but the directory is step_00000003");
  // A symbolic link under the newer name is the same attack.
  fs::remove_all(s.step(3));
  fs::create_directory_symlink(s.plain_step(3), s.root / "step_00000004");
  expect_plain_refused(s, s.root / "step_00000004", "the directory is step_00000004");
}

TEST(CheckpointAttacks, PlaintextUnderSealedNames) {
  Saved s;
  // One file: with the key, plaintext is refused wherever a sealed file belongs.
  copy_over(s.plain_step(3) / "model.safetensors", s.step(3) / "model.safetensors.sealed");
  expect_sealed_refused(s, s.step(3), "step_00000003/model.safetensors.sealed");
  // Every file, manifest included: refused with the key, and without it (export too).
  for (const char* f : {"manifest.json", "model.safetensors", "optimizer.safetensors", "state.json"})
    copy_over(s.plain_step(2) / f, s.step(2) / (std::string(f) + ".sealed"));
  expect_sealed_refused(s, s.step(2), "manifest.json.sealed: plaintext");
  const std::string nokey = integrity_error([&] { verify_checkpoint(s.step(2)); });
  EXPECT_NE(nokey.find("manifest.json.sealed: plaintext under a sealed file's name"), std::string::npos)
      << nokey;
  const fs::path out = s.tmp / "exported.safetensors";
  const std::string ex = integrity_error([&] { export_safetensors(s.step(2), nullptr, out); });
  EXPECT_NE(ex.find("manifest.json.sealed"), std::string::npos) << ex;
  EXPECT_FALSE(fs::exists(out));
}

TEST(CheckpointAttacks, PlainCheckpointWhereASealedOneBelongs) {
  Saved s;
  fs::remove_all(s.step(3));
  fs::copy(s.plain_step(3), s.step(3));  // plain names, plain manifest, in the sealed root
  expect_sealed_refused(s, s.step(3), "manifest.json: a plaintext manifest, but a key was given");
}

TEST(CheckpointAttacks, DeletedManifest) {
  Saved s;
  fs::remove(s.step(3) / "manifest.json.sealed");
  expect_sealed_refused(s, s.root, "step_00000003/manifest.json.sealed: missing");
  fs::remove(s.plain_step(3) / "manifest.json");
  expect_plain_refused(s, s.plain_root, "step_00000003/manifest.json: missing");
}

TEST(CheckpointAttacks, EditedManifest) {
  Saved s;
  const fs::path m = s.step(3) / "manifest.json.sealed";
  enginetest::flip_byte(m, tee::read_sealed_header(m).chunk_offset(0) + 30);
  expect_sealed_refused(s, s.step(3), "manifest.json.sealed': chunk 0");
  // Plain: an edited digest no longer matches its file; an edited step no longer matches the name.
  const fs::path pm = s.plain_step(3) / "manifest.json";
  std::vector<char> text = enginetest::read_all(pm);
  std::string t(text.begin(), text.end());
  const std::size_t at = t.find("\"sha256\": \"") + 11;
  t[at] = t[at] == '0' ? '1' : '0';
  testing::write_bytes(pm, t);
  expect_plain_refused(s, s.plain_step(3), "differs from the manifest's");
}

TEST(CheckpointAttacks, UnlistedFileInTheDirectory) {
  Saved s;
  testing::write_bytes(s.step(3) / "model.safetensors", "extra");
  expect_sealed_refused(s, s.step(3), "step_00000003/model.safetensors: not listed in the manifest");
}

TEST(CheckpointAttacks, RollbackPastTheFreshnessRecord) {
  Saved s;
  fs::remove_all(s.step(3));
  fs::remove_all(s.step(2));  // step 1 is genuine and now the newest: only the record can tell
  expect_sealed_refused(s, s.root,
                        "rollback: " + s.step(1).string() + " is step 1 but the freshness record (" +
                            s.record.path().string() + ") has seen step 3 of this run");
  const fs::path out = s.tmp / "exported.safetensors";
  EXPECT_NE(integrity_error([&] { export_safetensors(s.root, &s.key, out, &s.record); }).find("rollback"),
            std::string::npos);
  // Without the record the rollback is not detectable (documented): the checkpoint itself is fine.
  EXPECT_EQ(verify_checkpoint(s.root, &s.key).steps, 1);
  EXPECT_EQ(resume(s.root, *s.sealed, nullptr).step, 1);
}

TEST(CheckpointAttacks, SameStepWithADifferentManifest) {
  Saved s;
  // A second step 3 of the same lineage (saved after step 2, not recorded): genuine, sealed, chained,
  // yet not the step 3 the record has seen.
  CheckpointStore other(s.root, 5, *s.sealed);
  other.continue_lineage(open_verified_checkpoint(s.step(2), &s.key));
  other.save(*s.run.backend, s.run.model, s.run.opt.get(), s.run.meta(3));
  expect_sealed_refused(s, s.step(3), "is step 3 of this run, but not the step 3 the freshness record");
}

TEST(CheckpointAttacks, ReplacedPredecessorBreaksTheChain) {
  Saved s;
  CheckpointStore fork(s.root, 5, *s.sealed);  // a second step 2 after step 1, not recorded
  fork.continue_lineage(open_verified_checkpoint(s.step(1), &s.key));
  fork.save(*s.run.backend, s.run.model, s.run.opt.get(), s.run.meta(2));
  expect_sealed_refused(s, s.step(3), "step_00000002/manifest.json.sealed: chain broken");
}

TEST(CheckpointAttacks, FreshnessRecordItselfTamperedOrForeign) {
  Saved s;
  const tee::SealedHeader h = tee::read_sealed_header(s.record.path());
  enginetest::flip_byte(s.record.path(), h.chunk_offset(0) + 3);
  expect_sealed_refused(s, s.step(3), s.record.path().string());
  // Another key owner's record does not open: refused, not ignored.
  fs::remove(s.record.path());
  FreshnessRecord foreign(s.record.path(), tee::MasterKey::random());
  foreign.record(new_run_id(), 1, std::string(64, 'a'));
  expect_refused(s.step(3), *s.sealed, &s.key, &s.record, "key fingerprint mismatch");
}

TEST(CheckpointAttacks, UnknownLineageIsAcceptedAndSaid) {
  Saved s;
  FreshnessRecord empty(s.tmp / "other.key.freshness", s.master);
  empty.record(new_run_id(), 9, std::string(64, 'b'));
  const VerifyReport r = verify_checkpoint(s.root, &s.key, &empty);
  EXPECT_NE(r.text.find("unknown to"), std::string::npos) << r.text;
  FreshnessRecord none(s.tmp / "absent.freshness", s.master);
  EXPECT_NE(verify_checkpoint(s.step(3), &s.key, &none).text.find("no record at"), std::string::npos);
}

TEST(CheckpointAttacks, ResumedLineageKeepsItsRunIdAndChains) {
  Saved s;
  const VerifiedCheckpoint from = open_verified_checkpoint(s.step(3), &s.key);
  CheckpointStore next(s.root, 2, *s.sealed, &s.record);
  EXPECT_NE(next.run_id(), from.manifest.run_id);  // a fresh store starts a fresh lineage
  next.continue_lineage(from);
  const fs::path saved = next.save(*s.run.backend, s.run.model, s.run.opt.get(), s.run.meta(4));
  const VerifiedCheckpoint ck = open_verified_checkpoint(saved, &s.key);
  EXPECT_EQ(ck.manifest.run_id, from.manifest.run_id);
  EXPECT_EQ(ck.manifest.prev_step, 3);
  EXPECT_EQ(ck.manifest.prev_manifest_sha256, from.manifest_sha256);
  EXPECT_EQ(s.record.newest(ck.manifest.run_id)->step, 4);
  EXPECT_FALSE(fs::exists(s.step(1)));  // pruned to --keep 2
  EXPECT_EQ(verify_checkpoint(s.root, &s.key, &s.record).steps, 2);
  // The record never moves a lineage back.
  EXPECT_THROW(s.record.record(ck.manifest.run_id, 3, ck.manifest_sha256), IntegrityError);
}

// Batch-norm running statistics follow the parameters in model.safetensors: params_sha256 covers
// the parameters alone (state.json's param_floats says how many), the manifest the whole file.
TEST(CheckpointAttacks, ModelWithBufferStateVerifiesAndLoads) {
  TempDir tmp;
  auto backend = make_cpu_backend(1);
  const ResnetConfig cfg = ResnetConfig::preset("resnet-tiny");
  Resnet a(*backend, cfg);
  a.init_params(3);
  std::vector<float> stats(a.num_state_floats());
  for (std::size_t i = 0; i < stats.size(); ++i) stats[i] = 0.25f * static_cast<float>(i % 7);
  backend->copy_to_device(a.state_data(), stats.data(), stats.size() * sizeof(float));
  const tee::CheckpointKey key = tee::CheckpointKey::random();
  auto codec = make_sealed_codec(key);
  CheckpointStore store(tmp.path(), 1, *codec);
  CheckpointMeta meta;
  meta.step = 4;
  meta.config = {{"model", "resnet-tiny"}};
  const fs::path dir = store.save(*backend, a, nullptr, meta);  // params_sha256 filled in by save
  EXPECT_EQ(verify_checkpoint(dir, &key).steps, 1);
  Resnet b(*backend, cfg);
  b.init_params(9);
  const CheckpointMeta m = CheckpointStore::load(dir, *codec, *backend, b, nullptr);
  EXPECT_EQ(m.params_sha256, params_sha256(*backend, a));
  EXPECT_EQ(m.param_floats, a.num_params());
  std::vector<float> got(stats.size());
  backend->copy_to_host(got.data(), b.state_data(), got.size() * sizeof(float));
  EXPECT_EQ(got, stats);
}

}  // namespace
}  // namespace tt
