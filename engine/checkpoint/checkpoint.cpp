#include "engine/checkpoint/checkpoint.h"

#include <unistd.h>

#include <algorithm>

#include "base/error.h"
#include "engine/checkpoint/checkpoint_lineage.h"
#include "engine/checkpoint/freshness.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/file_util.h"
#include "engine/param_chunks.h"
#include "tee/crypto/sealed_file.h"
#include "tee/digest.h"
#include "tee/errors.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

class PlainCodec final : public FileCodec {
 public:
  std::string suffix() const override { return ""; }
  void write(const fs::path& path, std::span<const std::byte> bytes, const std::string&,
             std::optional<long>) override {
    write_file_atomic(path, bytes);
  }
  const tee::CheckpointKey* key() const override { return nullptr; }
};

constexpr const char* kMarker = kCheckpointMarker;

// Size and SHA-256 of a file as it lies on disk (streamed: a model file may be gigabytes), through
// the one opener of files on a disk we do not own (tee/regular_file.h).
ManifestFile listed(const fs::path& path) {
  const tee::OpenAttempt a = tee::try_open_regular(path, tee::FollowLinks::No);
  if (!a.ok()) throw RunError(path.string() + ": cannot read back what was just written (" + a.why() + ")");
  tee::Sha256 h;
  std::vector<std::uint8_t> buf(std::size_t{1} << 20);
  std::uint64_t size = 0;
  for (;;) {
    const long long n = tee::pread_full(a.file.fd.get(), buf, size);
    if (n < 0) throw RunError(path.string() + ": cannot read back what was just written");
    if (n == 0) break;
    h.update(tee::ByteView(buf.data(), static_cast<std::size_t>(n)));
    size += static_cast<std::uint64_t>(n);
  }
  return {path.filename().string(), size, tee::to_hex(h.finish())};
}

// Note [Checkpoint files read back]: what a save lists in the manifest is the file as the disk returns it
// after the write's fsync (listed), and the file must give back exactly the bytes meant: plain, their
// digest; sealed, the plaintext its chunks open to. So a short write, a failed one the file system did
// not report, or a sealed file that does not open is refused here (RunError, exit 1), before the manifest
// commits the step, rather than by the resume that needs it. A rank's optimizer shard is checked by that
// rank, on its own disk, before it reports the entry to rank 0 (TrainingRun::save_shards).
ManifestFile written(const FileCodec& codec, const fs::path& path, std::span<const std::byte> bytes) {
  const ManifestFile f = listed(path);
  const tee::ByteView meant(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  bool same = false;
  if (codec.key() == nullptr) {
    same = f.size == bytes.size() && f.sha256 == tee::to_hex(tee::sha256(meant));
  } else {
    try {
      const std::vector<std::uint8_t> back = tee::read_sealed_file(path, *codec.key());
      same = back.size() == bytes.size() && std::equal(back.begin(), back.end(), meant.begin());
    } catch (const Error&) {
      same = false;  // a sealed file that does not open is not what was written
    }
  }
  if (!same)
    throw RunError("checkpoint save: " + tee::printable_path(path) + " reads back " + std::to_string(f.size) +
                   " bytes that are not what was written (a short or failed write; is the disk full?); the "
                   "step is not saved");
  return f;
}

std::vector<float> to_host(Backend& backend, const float* src, std::size_t n) {
  std::vector<float> host(n);
  if (n > 0) backend.copy_to_host(host.data(), src, n * sizeof(float));  // models without state pass null
  return host;
}

// Copies a decoded tensor into the device buffer at `dst`, checking its shape against `p`.
void load_tensor(Backend& backend, const DecodedSafetensors& st, const std::string& name, const ParamInfo& p,
                 float* dst, const fs::path& file) {
  const auto it = st.tensors.find(name);
  if (it == st.tensors.end()) throw InputError(file.string() + ": tensor '" + name + "' is missing");
  if (it->second.shape != p.shape) {
    throw InputError(file.string() + ": tensor '" + name + "' has a different shape than the model; " +
                     "resume with the same --model and shape flags");
  }
  backend.copy_to_device(dst, it->second.data.data(), it->second.data.size() * sizeof(float));
}

// Optimizer state tensors are named "<slot>.<param>": m and v for AdamW, momentum for SGD (a sharded
// checkpoint's shard files name them "<slot>" alone: one tensor of the shard's floats per slot).
std::string slot_name(const Optimizer& opt, std::size_t s) {
  if (opt.name() == "adamw") return s == 0 ? "m" : "v";
  return "momentum";
}

std::size_t slot_count(const Optimizer& opt) {
  if (opt.state_floats() == 0) return 0;
  return opt.name() == "adamw" ? 2 : 1;
}

// Rank `rank`'s shard file of a verified sharded checkpoint, decoded, of `optimizer`'s kind.
DecodedSafetensors decode_shard(const VerifiedCheckpoint& ck, int rank, const Optimizer& optimizer) {
  const fs::path file = ck.dir / (optimizer_shard_file(rank) + (ck.sealed ? ".sealed" : ""));
  const auto& bytes = ck.shards.at(static_cast<std::size_t>(rank));
  DecodedSafetensors st = safetensors_decode(std::as_bytes(std::span(bytes)), file.string());
  const auto it = st.metadata.find("optimizer");
  if (it == st.metadata.end() || it->second != optimizer.name())
    throw InputError(file.string() + ": optimizer state is not " + optimizer.name() +
                     "; resume with the same --optimizer");
  for (std::size_t s = 0; s < slot_count(optimizer); ++s)
    if (st.tensors.count(slot_name(optimizer, s)) == 0)
      throw InputError(file.string() + ": tensor '" + slot_name(optimizer, s) + "' is missing");
  return st;
}

// The whole optimizer state ([slot (n floats)] x slots) from every rank's shard: a sharded checkpoint
// resumed by a whole optimizer, or by another layout (resharded).
void assemble_shards(const VerifiedCheckpoint& ck, Backend& backend, Optimizer& optimizer, std::size_t n) {
  const ShardLayout& layout = *ck.manifest.layout;
  if (layout.params != n)
    throw InputError(ck.manifest_path.string() + ": the shards hold " + std::to_string(layout.params) +
                     " parameters, the model " + std::to_string(n) + "; resume with the same --model");
  std::vector<float> full(slot_count(optimizer) * n);  // [slot (n floats)] x slots
  for (int r = 0; r < layout.world; ++r) {
    const DecodedSafetensors st = decode_shard(ck, r, optimizer);
    for (std::size_t s = 0; s < slot_count(optimizer); ++s) {
      const std::vector<float>& packed = st.tensors.at(slot_name(optimizer, s)).data;
      std::size_t at = 0;
      for (const ParamRange& range : layout.shards[static_cast<std::size_t>(r)]) {
        std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(at), range.count,
                    full.begin() + static_cast<std::ptrdiff_t>(s * n + range.offset));
        at += range.count;
      }
    }
  }
  if (!full.empty()) backend.copy_to_device(optimizer.state_data(), full.data(), full.size() * sizeof(float));
}

std::string save_failed(const fs::path& p, const std::error_code& ec) {
  return "checkpoint save: " + tee::printable_path(p) + ": " + ec.message();
}

// Removes a half-written temporary step directory when save() leaves by an exception (a codec or
// disk failure), so failed saves leave no debris; the last complete checkpoint is never touched.
struct TmpDirGuard {
  fs::path path;
  bool armed = true;
  ~TmpDirGuard() {
    std::error_code ignored;
    if (armed) fs::remove_all(path, ignored);
  }
};

}  // namespace

std::unique_ptr<FileCodec> make_plain_codec() {
  return std::make_unique<PlainCodec>();
}

std::vector<std::byte> encode_params_safetensors(Backend& backend, Model& model,
                                                 const std::map<std::string, std::string>& metadata) {
  const std::vector<float> host = to_host(backend, model.param_data(), model.num_params());
  std::vector<SafeTensor> tensors;
  for (const ParamInfo& p : model.params())
    tensors.push_back({p.name, p.shape, std::span(host).subspan(p.offset, p.numel)});
  // Non-parameter state (batch-norm running statistics) rides along under its own names, as in a
  // PyTorch state_dict, so an exported model.safetensors loads into torchvision unchanged.
  const std::vector<ParamInfo> buffers = model.state_buffers();
  const std::vector<float> state = to_host(backend, model.state_data(), model.num_state_floats());
  for (const ParamInfo& b : buffers)
    tensors.push_back({b.name, b.shape, std::span(state).subspan(b.offset, b.numel)});
  return safetensors_encode(tensors, metadata);
}

// Note [Parameter shards in the optimizer shard's file]: at --shard params the model file holds the
// buffers only, and names the parameters (in table order, with their shapes) in its metadata.
std::vector<std::byte> encode_buffers_safetensors(Backend& backend, Model& model) {
  nlohmann::json table = nlohmann::json::array();
  for (const ParamInfo& p : model.params()) table.push_back({{"name", p.name}, {"shape", p.shape}});
  const std::vector<float> state = to_host(backend, model.state_data(), model.num_state_floats());
  std::vector<SafeTensor> tensors;
  for (const ParamInfo& b : model.state_buffers())
    tensors.push_back({b.name, b.shape, std::span(state).subspan(b.offset, b.numel)});
  return safetensors_encode(tensors, {{"format", "pt"}, {kParamTableKey, table.dump()}});
}

CheckpointStore::CheckpointStore(fs::path dir, int keep, FileCodec& codec, FreshnessRecord* freshness,
                                 WarnFn warn)
    : dir_(std::move(dir)),
      keep_(std::max(1, keep)),
      codec_(codec),
      freshness_(freshness),
      run_id_(new_run_id()),
      warn_(std::move(warn)) {
  const std::string where = "--ckpt-dir '" + tee::printable_path(dir_) + "'";
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError(where + ": cannot create (" + ec.message() + ")");
  // Try a write now: a read-only or unusable directory is refused before any step is trained,
  // instead of failing the first save.
  const fs::path probe = dir_ / (".teetrain-write-probe." + std::to_string(::getpid()));
  fs::create_directory(probe, ec);
  if (ec)
    throw InputError(where + ": cannot write there (" + ec.message() + "); choose a writable directory");
  fs::remove(probe, ec);
}

void CheckpointStore::continue_lineage(const VerifiedCheckpoint& from) {
  run_id_ = from.manifest.run_id;
  prev_step_ = from.manifest.step;
  prev_manifest_sha256_ = from.manifest_sha256;
}

namespace {

// Optimizer state as tensors named "<slot>.<param>", slot = m/v (AdamW) or momentum (SGD).
std::vector<std::byte> encode_optimizer(Backend& backend, Model& model, Optimizer& optimizer) {
  const std::vector<float> state = to_host(backend, optimizer.state_data(), optimizer.state_floats());
  const std::size_t slots = optimizer.state_floats() / model.num_params();
  std::vector<SafeTensor> tensors;
  for (std::size_t s = 0; s < slots; ++s) {
    const std::string slot = slot_name(optimizer, s);
    for (const ParamInfo& p : model.params()) {
      tensors.push_back({slot + "." + p.name, p.shape,
                         std::span(state).subspan(s * model.num_params() + p.offset, p.numel)});
    }
  }
  return safetensors_encode(tensors, {{"optimizer", optimizer.name()}});
}

// A rank's optimizer shard as tensors "<slot>" of its packed floats ([S] each, S = state / slots),
// with the rank and step it was saved at.
// At --shard params also "params": the rank's parameter floats of the same ranges, packed the same way
// (Note [Parameter shards in the optimizer shard's file], checkpoint_manifest.h).
std::vector<std::byte> encode_optimizer_shard(Backend& backend, Optimizer& optimizer, int rank, long step,
                                              std::span<const float> params) {
  const std::vector<float> state = to_host(backend, optimizer.state_data(), optimizer.state_floats());
  const std::size_t slots = slot_count(optimizer);
  const std::size_t per_slot = slots > 0 ? state.size() / slots : 0;
  std::vector<SafeTensor> tensors;
  if (!params.empty()) tensors.push_back({kParamsShardTensor, {static_cast<int64_t>(params.size())}, params});
  for (std::size_t s = 0; s < slots; ++s)
    tensors.push_back({slot_name(optimizer, s),
                       {static_cast<int64_t>(per_slot)},
                       std::span(state).subspan(s * per_slot, per_slot)});
  return safetensors_encode(
      tensors,
      {{"optimizer", optimizer.name()}, {"rank", std::to_string(rank)}, {"step", std::to_string(step)}});
}

// Every rank's shard, as it reported it: named for its rank, on disk at the size it reported (the
// digests are the ranks' own, over the sealed channel: rank 0 does not read the others' shards back).
void add_shards(const fs::path& tmp, const std::string& sfx, const ShardedSave& shards,
                CheckpointManifest& manifest) {
  for (std::size_t r = 0; r < shards.files.size(); ++r) {
    const ManifestFile& f = shards.files[r];
    const fs::path p = tmp / (optimizer_shard_file(static_cast<int>(r)) + sfx);
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (f.name != p.filename().string() || ec || size != f.size)
      throw RunError("checkpoint save: rank " + std::to_string(r) + "'s shard " + tee::printable_path(p) +
                     " is not on disk as that rank reported it (is --ckpt-dir shared by every rank?)");
    manifest.files.push_back(f);
  }
  manifest.layout = shards.layout;
}

}  // namespace

fs::path CheckpointStore::tmp_dir(long step) const {
  std::string tmp_name = ".";  // appends only: GCC 12's -Wrestrict misfires on "." + string
  tmp_name.append(step_dir_name(step)).append(".tmp.").append(std::to_string(::getpid()));
  return dir_ / tmp_name;
}

fs::path CheckpointStore::begin_save(long step) {
  const fs::path tmp = tmp_dir(step);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw RunError(save_failed(tmp, ec));
  return tmp;
}

ManifestFile CheckpointStore::write_optimizer_shard(FileCodec& codec, const fs::path& tmp, Backend& backend,
                                                    Optimizer& optimizer, int rank, long step,
                                                    const ParamShard* params) {
  std::vector<float> packed;  // [S]: this rank's parameter floats, its ranges in order
  if (params != nullptr)
    for (const ParamRange& r : params->ranges) {
      const std::vector<float> part = to_host(backend, params->model.param_data() + r.offset, r.count);
      packed.insert(packed.end(), part.begin(), part.end());
    }
  const fs::path path = tmp / (optimizer_shard_file(rank) + codec.suffix());
  const std::vector<std::byte> bytes = encode_optimizer_shard(backend, optimizer, rank, step, packed);
  codec.write(path, bytes, "optimizer", step);
  return written(codec, path, bytes);  // Note [Checkpoint files read back]
}

fs::path CheckpointStore::save(Backend& backend, Model& model, Optimizer* optimizer,
                               const CheckpointMeta& meta, const ShardedSave* shards) {
  const fs::path final_dir = dir_ / step_dir_name(meta.step);
  const fs::path tmp = shards != nullptr ? tmp_dir(meta.step) : begin_save(meta.step);
  std::error_code ec;
  TmpDirGuard guard{tmp};
  const std::string sfx = codec_.suffix();
  CheckpointManifest manifest{
      run_id_, meta.step, step_dir_name(meta.step), prev_step_, prev_manifest_sha256_, {}, std::nullopt};
  auto put = [&](const std::string& name, std::span<const std::byte> bytes, const std::string& kind) {
    codec_.write(tmp / (name + sfx), bytes, kind, std::nullopt);
    manifest.files.push_back(
        written(codec_, tmp / (name + sfx), bytes));  // Note [Checkpoint files read back]
  };
  const bool param_shards = shards != nullptr && shards->layout.stage == ShardStage::Params;
  put(kModelFile,
      param_shards ? encode_buffers_safetensors(backend, model)
                   : encode_params_safetensors(backend, model, {{"format", "pt"}}),
      "model");
  if (optimizer != nullptr) put(kOptimizerFile, encode_optimizer(backend, model, *optimizer), "optimizer");
  if (shards != nullptr) add_shards(tmp, sfx, *shards, manifest);
  CheckpointMeta state = meta;
  state.param_floats = model.num_params();
  if (state.params_sha256.empty() && !param_shards) state.params_sha256 = params_sha256(backend, model);
  if (state.params_sha256.empty()) throw std::logic_error("save: parameter shards need their digest given");
  const std::string text = encode_checkpoint_state(state);
  put(kStateFile, std::as_bytes(std::span(text.data(), text.size())), "state");
  const std::string mtext = encode_manifest(manifest);
  codec_.write(tmp / (kManifestFile + sfx), std::as_bytes(std::span(mtext.data(), mtext.size())), "manifest",
               std::nullopt);
  const std::string manifest_sha256 = listed(tmp / (kManifestFile + sfx)).sha256;
  write_text_atomic(tmp / kMarker, "step " + std::to_string(meta.step) + "\n");
  sync_directory(tmp);

  make_room(final_dir);  // re-saving the same step (e.g. after a resume) replaces it if it is ours
  fs::rename(tmp, final_dir, ec);
  if (ec) throw RunError(save_failed(final_dir, ec));
  guard.armed = false;
  sync_directory(dir_);
  // After the rename: a crash in between leaves the record one save behind, which accepts the newer
  // checkpoint; the other order would leave a record that refuses the only checkpoint there is.
  if (freshness_ != nullptr) freshness_->record(run_id_, meta.step, manifest_sha256);
  prev_step_ = meta.step;
  prev_manifest_sha256_ = manifest_sha256;
  prune(meta.step, manifest_sha256);
  return final_dir;
}

void CheckpointStore::warn_once(const fs::path& entry, const std::string& why) {
  if (warned_.insert(entry.filename().string()).second && warn_)
    warn_("--keep leaves " + tee::printable_path(entry) + " alone: " + why);
}

// A step directory of this name already there: replaced when it is this lineage's own save (a resume
// from an older step re-saves the steps after it), moved aside otherwise (another run's checkpoint,
// or something planted): a save never deletes what it has not verified.
void CheckpointStore::make_room(const fs::path& final_dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(final_dir, ec))) return;
  std::string why;
  const auto m = read_step_manifest(final_dir, codec_.key(), why);
  if (m && m->manifest.run_id == run_id_) {
    fs::remove_all(final_dir, ec);
    if (ec) throw RunError(save_failed(final_dir, ec));
    return;
  }
  const fs::path aside =
      dir_ / ("displaced_" + final_dir.filename().string() + "." + std::to_string(::getpid()));
  fs::rename(final_dir, aside, ec);
  if (ec) throw RunError(save_failed(final_dir, ec));
  if (warn_)
    warn_(tee::printable_path(final_dir) + " was not this run's checkpoint (" + (m ? "another run" : why) +
          "); moved to " + tee::printable_path(aside));
}

// Note [Pruning only verified checkpoints] (checkpoint_lineage.h).
void CheckpointStore::prune(long step, const std::string& manifest_sha256) {
  const std::vector<fs::path> ours = verified_lineage(dir_, run_id_, step, manifest_sha256, codec_.key());
  std::error_code ec;
  for (std::size_t i = static_cast<std::size_t>(keep_); i < ours.size(); ++i) {
    fs::remove_all(ours[i], ec);
    if (ec)
      throw RunError("--keep: cannot delete " + tee::printable_path(ours[i]) + " (" + ec.message() + ")");
  }
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) != 0 || warned_.count(n) > 0 ||
        std::find(ours.begin(), ours.end(), e.path()) != ours.end())
      continue;
    std::string why;
    const auto m = read_step_manifest(e.path(), codec_.key(), why);
    if (m && m->manifest.run_id != run_id_)
      why = "a checkpoint of another run, " + m->manifest.run_id;
    else if (m)
      why = "a save of this run off the verified chain of its saves";
    warn_once(e.path(), "not verified as this run's (" + why + ")");
  }
}

std::vector<fs::path> CheckpointStore::complete_steps(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    std::error_code sub;
    if (e.is_directory(sub) && n.rfind("step_", 0) == 0 && fs::exists(e.path() / kMarker, sub))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());  // zero-padded names sort by step
  return out;
}

fs::path CheckpointStore::resolve(const fs::path& path, const std::string& flag) {
  std::error_code ec;
  const bool found = fs::exists(path, ec);
  if (ec) throw InputError(flag + " '" + tee::printable_path(path) + "': " + ec.message());
  if (!found) throw InputError(flag + " " + path.string() + ": no such checkpoint directory");
  if (fs::exists(path / kMarker, ec)) return path;
  const auto steps = complete_steps(path);
  if (steps.empty()) {
    throw InputError(flag + " " + path.string() + ": no complete checkpoint inside (looked for step_*/" +
                     kMarker + ")");
  }
  return steps.back();
}

void CheckpointStore::load_own_shard(const VerifiedCheckpoint& ck, Backend& backend, Optimizer& optimizer,
                                     int rank) {
  const DecodedSafetensors st = decode_shard(ck, rank, optimizer);
  const std::size_t slots = slot_count(optimizer);
  const std::size_t per_slot = slots > 0 ? optimizer.state_floats() / slots : 0;
  for (std::size_t s = 0; s < slots; ++s) {
    const std::vector<float>& packed = st.tensors.at(slot_name(optimizer, s)).data;
    if (packed.size() != per_slot) throw std::logic_error("load_own_shard: a shard of another layout");
    backend.copy_to_device(optimizer.state_data() + s * per_slot, packed.data(), per_slot * sizeof(float));
  }
}

CheckpointMeta CheckpointStore::load_own_params(const VerifiedCheckpoint& ck, Backend& backend, Model& model,
                                                int rank, const FreshnessRecord* freshness) {
  if (freshness != nullptr) freshness->check(ck);
  const fs::path mfile = ck.dir / (std::string(kModelFile) + (ck.sealed ? ".sealed" : ""));
  const DecodedSafetensors st = safetensors_decode(std::as_bytes(std::span(ck.model)), mfile.string());
  for (const ParamInfo& b : model.state_buffers())
    load_tensor(backend, st, b.name, b, model.state_data() + b.offset, mfile);
  const fs::path sfile = ck.dir / (optimizer_shard_file(rank) + (ck.sealed ? ".sealed" : ""));
  const DecodedSafetensors sh = safetensors_decode(
      std::as_bytes(std::span(ck.shards.at(static_cast<std::size_t>(rank)))), sfile.string());
  const std::vector<float>& packed = sh.tensors.at(kParamsShardTensor).data;  // checked when verified
  std::size_t at = 0;
  for (const ParamRange& r : ck.manifest.layout->shards.at(static_cast<std::size_t>(rank))) {
    backend.copy_to_device(model.param_data() + r.offset, packed.data() + at, r.count * sizeof(float));
    at += r.count;
  }
  return ck.meta;
}

CheckpointMeta CheckpointStore::read_meta(const fs::path& step_dir, FileCodec& codec) {
  return open_verified_checkpoint(step_dir, codec.key(), VerifyScope::State).meta;
}

CheckpointMeta CheckpointStore::load(const fs::path& step_dir, FileCodec& codec, Backend& backend,
                                     Model& model, Optimizer* optimizer, const FreshnessRecord* freshness) {
  return load(open_verified_checkpoint(step_dir, codec.key()), backend, model, optimizer, freshness);
}

CheckpointMeta CheckpointStore::load(const VerifiedCheckpoint& ck, Backend& backend, Model& model,
                                     Optimizer* optimizer, const FreshnessRecord* freshness) {
  if (ck.model.empty()) throw std::logic_error("CheckpointStore::load needs a checkpoint verified in full");
  if (freshness != nullptr) freshness->check(ck);
  const fs::path mfile = ck.dir / (std::string(kModelFile) + (ck.sealed ? ".sealed" : ""));
  const DecodedSafetensors st = safetensors_decode(std::as_bytes(std::span(ck.model)), mfile.string());
  for (const ParamInfo& p : model.params())
    load_tensor(backend, st, p.name, p, model.param_data() + p.offset, mfile);
  for (const ParamInfo& b : model.state_buffers())
    load_tensor(backend, st, b.name, b, model.state_data() + b.offset, mfile);
  // Resume is bit-exact or refused: what landed in the model is what the run state recorded.
  if (params_sha256(backend, model) != ck.meta.params_sha256) {
    throw IntegrityError(mfile.string() +
                         ": the loaded parameters do not hash to state.json's params_sha256");
  }
  if (optimizer == nullptr) return ck.meta;
  if (ck.manifest.layout) {
    assemble_shards(ck, backend, *optimizer, model.num_params());
    return ck.meta;
  }
  const fs::path ofile = ck.dir / (std::string(kOptimizerFile) + (ck.sealed ? ".sealed" : ""));
  if (ck.optimizer.empty())
    throw InputError(ofile.string() + ": missing (the checkpoint holds no optimizer state)");
  const DecodedSafetensors os = safetensors_decode(std::as_bytes(std::span(ck.optimizer)), ofile.string());
  const auto it = os.metadata.find("optimizer");
  if (it == os.metadata.end() || it->second != optimizer->name()) {
    throw InputError(ofile.string() + ": optimizer state is not " + optimizer->name() +
                     "; resume with the same --optimizer");
  }
  const std::size_t slots = optimizer->state_floats() / model.num_params();
  for (std::size_t s = 0; s < slots; ++s) {
    const std::string slot = slot_name(*optimizer, s);
    for (const ParamInfo& p : model.params()) {
      load_tensor(backend, os, slot + "." + p.name, p,
                  optimizer->state_data() + s * model.num_params() + p.offset, ofile);
    }
  }
  return ck.meta;
}

}  // namespace tt
