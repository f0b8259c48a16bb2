// `teetrain sample`: generate byte-level text from a saved checkpoint.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "core/backend_factory.h"
#include "core/rng.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/keys/key_file.h"
#include "models/common/token_model.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {
namespace {

struct SampleOptions {
  std::string ckpt;
  std::string prompt = "\n";
  int tokens = 300;
  float temperature = 0.8f;
  int top_k = 40;
  uint64_t seed = 42;
  int threads = 0;
  DeviceKind device = DeviceKind::Cpu;
  std::string key_file;  // for sealed (TEE-mode) checkpoints
};

// Draws a token from the top-k of softmax(logits / temperature).
int draw(const std::vector<float>& logits, float temperature, int top_k, Rng& rng) {
  std::vector<int> idx(logits.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  const auto k = static_cast<std::size_t>(std::clamp(top_k, 1, static_cast<int>(idx.size())));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](int a, int b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)];
  });
  const double top = logits[static_cast<std::size_t>(idx[0])];
  std::vector<double> p(k);
  double sum = 0;
  for (std::size_t i = 0; i < k; ++i) {
    p[i] = std::exp((logits[static_cast<std::size_t>(idx[i])] - top) /
                    std::max(1e-4, static_cast<double>(temperature)));
    sum += p[i];
  }
  double u = rng.uniform() * sum;
  for (std::size_t i = 0; i < k; ++i) {
    if ((u -= p[i]) <= 0) return idx[i];
  }
  return idx[k - 1];
}

void run_sample(const SampleOptions& o) {
  std::unique_ptr<FileCodec> codec = make_plain_codec();
  if (!o.key_file.empty()) {
    const tee::MasterKey master = load_key_file(o.key_file);
    codec = make_sealed_codec(derive_checkpoint_key(master));
  }
  const auto dir = CheckpointStore::resolve(o.ckpt, "--ckpt");
  const CheckpointMeta meta = CheckpointStore::read_meta(dir, *codec);
  const ModelOptions mo = model_options_from_checkpoint(meta.config, dir.string());
  if (is_image_model(mo)) {
    throw InputError("sample: the checkpoint holds " + mo.name +
                     ", an image classifier; sample takes GPT-2 and Llama checkpoints");
  }
  if (is_masked_lm(mo)) {
    throw InputError(
        "sample: the checkpoint holds " + mo.name +
        ", a masked language model (it fills in [MASK], it does not continue text); sample takes "
        "GPT-2 and Llama checkpoints");
  }
  if (mo.vocab != 256) {
    throw InputError("sample: the checkpoint's model has vocabulary " + std::to_string(mo.vocab) +
                     "; sampling prints bytes and needs a byte-level model (vocab 256)");
  }
  std::unique_ptr<Backend> backend = make_backend(backend_options(o.device, o.threads > 0 ? o.threads : 2));
  std::unique_ptr<Model> model = make_model(*backend, mo);
  CheckpointStore::load(dir, *codec, *backend, *model, nullptr);
  auto& lm = dynamic_cast<CausalLm&>(*model);
  const int context = lm.max_context();

  std::vector<int32_t> tokens;
  for (unsigned char c : o.prompt) tokens.push_back(c);
  if (tokens.empty()) tokens.push_back('\n');
  Rng rng(o.seed);
  std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
  for (int i = 0; i < o.tokens; ++i) {
    const int T = std::min(static_cast<int>(tokens.size()), context);
    const std::vector<int32_t> window(tokens.end() - T, tokens.end());
    const std::vector<float> logits = lm.forward_logits(window, 1, T);
    const int next = draw(logits, o.temperature, o.top_k, rng);
    tokens.push_back(next);
    std::fputc(next, stdout);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
}

}  // namespace

void register_sample(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  auto* cmd = app.add_subcommand("sample", "Generate text from a saved byte-level model");
  cmd->add_option("--ckpt", o->ckpt, "Checkpoint: a step directory or a --ckpt-dir (newest is used)")
      ->required();
  cmd->add_option("--prompt", o->prompt, "Text to continue");
  cmd->add_option("--tokens", o->tokens, "Bytes to generate")->check(positive())->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "Softmax temperature")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Sample from the k most likely bytes")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Compute threads (0 = 2)")->check(non_negative());
  add_enum_option(cmd, "--device", o->device, "Where the model runs");
  cmd->add_option("--key-file", o->key_file, "Master key file, for a sealed (TEE-mode) checkpoint");
  cmd->callback([o] { run_sample(*o); });
}

}  // namespace tt::cli
