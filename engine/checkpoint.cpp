#include "engine/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/file_util.h"
#include "engine/safetensors.h"

namespace tt {
namespace fs = std::filesystem;

namespace {

class PlainCodec final : public FileCodec {
 public:
  std::string suffix() const override { return ""; }
  void write(const fs::path& path, std::span<const std::byte> bytes, const std::string&) override {
    write_file_atomic(path, bytes);
  }
  std::vector<std::byte> read(const fs::path& path) override { return read_file_bytes(path); }
};

constexpr const char* kMarker = "COMPLETE";

std::string step_name(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08ld", step);
  return buf;
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

// Optimizer state tensors are named "<slot>.<param>": m and v for AdamW, momentum for SGD.
std::string slot_name(const Optimizer& opt, std::size_t s) {
  if (opt.name() == "adamw") return s == 0 ? "m" : "v";
  return "momentum";
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

std::unique_ptr<FileCodec> make_plain_codec() { return std::make_unique<PlainCodec>(); }

std::vector<std::byte> encode_params_safetensors(Backend& backend, Model& model,
                                                 const std::map<std::string, std::string>& metadata) {
  const std::vector<float> host = to_host(backend, model.param_data(), model.num_params());
  std::vector<SafeTensor> tensors;
  for (const ParamInfo& p : model.params()) tensors.push_back({p.name, p.shape, std::span(host).subspan(p.offset, p.numel)});
  // Non-parameter state (batch-norm running statistics) rides along under its own names, as in a
  // PyTorch state_dict, so an exported model.safetensors loads into torchvision unchanged.
  const std::vector<ParamInfo> buffers = model.state_buffers();
  const std::vector<float> state = to_host(backend, model.state_data(), model.num_state_floats());
  for (const ParamInfo& b : buffers) tensors.push_back({b.name, b.shape, std::span(state).subspan(b.offset, b.numel)});
  return safetensors_encode(tensors, metadata);
}

CheckpointStore::CheckpointStore(fs::path dir, int keep, FileCodec& codec)
    : dir_(std::move(dir)), keep_(std::max(1, keep)), codec_(codec) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError("--ckpt-dir " + dir_.string() + ": cannot create (" + ec.message() + ")");
}

fs::path CheckpointStore::save(Backend& backend, Model& model, Optimizer* optimizer, const CheckpointMeta& meta) {
  const fs::path final_dir = dir_ / step_name(meta.step);
  const fs::path tmp = dir_ / ("." + step_name(meta.step) + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  TmpDirGuard guard{tmp};
  const std::string sfx = codec_.suffix();

  codec_.write(tmp / ("model.safetensors" + sfx), encode_params_safetensors(backend, model, {{"format", "pt"}}), "model");
  if (optimizer != nullptr) {
    // Optimizer state as tensors named "<slot>.<param>", slot = m/v (AdamW) or momentum (SGD).
    const std::vector<float> state = to_host(backend, optimizer->state_data(), optimizer->state_floats());
    const std::size_t slots = optimizer->state_floats() / model.num_params();
    std::vector<SafeTensor> tensors;
    for (std::size_t s = 0; s < slots; ++s) {
      const std::string slot = slot_name(*optimizer, s);
      for (const ParamInfo& p : model.params()) {
        tensors.push_back({slot + "." + p.name, p.shape,
                           std::span(state).subspan(s * model.num_params() + p.offset, p.numel)});
      }
    }
    codec_.write(tmp / ("optimizer.safetensors" + sfx), safetensors_encode(tensors, {{"optimizer", optimizer->name()}}),
                 "optimizer");
  }
  nlohmann::json j = {{"step", meta.step},
                      {"samples_consumed", meta.samples_consumed},
                      {"seed", meta.seed},
                      {"params_sha256", meta.params_sha256},
                      {"config", meta.config}};
  const std::string text = j.dump(2);
  codec_.write(tmp / ("state.json" + sfx), std::as_bytes(std::span(text.data(), text.size())), "state");
  write_text_atomic(tmp / kMarker, "step " + std::to_string(meta.step) + "\n");
  sync_directory(tmp);

  fs::remove_all(final_dir);  // re-saving the same step (e.g. after a resume) replaces it
  fs::rename(tmp, final_dir);
  guard.armed = false;
  sync_directory(dir_);

  const auto steps = complete_steps(dir_);
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < steps.size(); ++i) fs::remove_all(steps[i]);
  return final_dir;
}

std::vector<fs::path> CheckpointStore::complete_steps(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step_", 0) == 0 && fs::exists(e.path() / kMarker)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());  // zero-padded names sort by step
  return out;
}

fs::path CheckpointStore::resolve(const fs::path& path) {
  if (!fs::exists(path)) throw InputError("--resume " + path.string() + ": no such checkpoint directory");
  if (fs::exists(path / kMarker)) return path;
  const auto steps = complete_steps(path);
  if (steps.empty()) {
    throw InputError("--resume " + path.string() + ": no complete checkpoint inside (looked for step_*/" + kMarker + ")");
  }
  return steps.back();
}

CheckpointMeta CheckpointStore::read_meta(const fs::path& step_dir, FileCodec& codec) {
  const fs::path file = step_dir / ("state.json" + codec.suffix());
  if (!fs::exists(file)) {
    throw InputError(file.string() + ": missing (a sealed checkpoint needs --tee, a plain one needs --tee off)");
  }
  const std::vector<std::byte> bytes = codec.read(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  CheckpointMeta m;
  m.step = j.at("step").get<long>();
  m.samples_consumed = j.at("samples_consumed").get<uint64_t>();
  m.seed = j.at("seed").get<uint64_t>();
  m.params_sha256 = j.value("params_sha256", "");
  m.config = j.value("config", nlohmann::json::object());
  return m;
}

CheckpointMeta CheckpointStore::load(const fs::path& step_dir, FileCodec& codec, Backend& backend, Model& model,
                                     Optimizer* optimizer) {
  CheckpointMeta meta = read_meta(step_dir, codec);
  const fs::path mfile = step_dir / ("model.safetensors" + codec.suffix());
  const DecodedSafetensors st = safetensors_decode(codec.read(mfile), mfile.string());
  for (const ParamInfo& p : model.params()) load_tensor(backend, st, p.name, p, model.param_data() + p.offset, mfile);
  for (const ParamInfo& b : model.state_buffers()) load_tensor(backend, st, b.name, b, model.state_data() + b.offset, mfile);
  if (optimizer != nullptr) {
    const fs::path ofile = step_dir / ("optimizer.safetensors" + codec.suffix());
    const DecodedSafetensors os = safetensors_decode(codec.read(ofile), ofile.string());
    const auto it = os.metadata.find("optimizer");
    if (it == os.metadata.end() || it->second != optimizer->name()) {
      throw InputError(ofile.string() + ": optimizer state is not " + optimizer->name() + "; resume with the same --optimizer");
    }
    const std::size_t slots = optimizer->state_floats() / model.num_params();
    for (std::size_t s = 0; s < slots; ++s) {
      const std::string slot = slot_name(*optimizer, s);
      for (const ParamInfo& p : model.params()) {
        load_tensor(backend, os, slot + "." + p.name, p, optimizer->state_data() + s * model.num_params() + p.offset, ofile);
      }
    }
  }
  return meta;
}

}  // namespace tt
