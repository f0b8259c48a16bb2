// LlamaConfig: validation, parameter counting and the named presets.
#include <sstream>

#include "base/error.h"
#include "models/llama/llama.h"

namespace tt {

void LlamaConfig::validate() const {
  auto positive = [](const char* what, int v) {
    if (v <= 0)
      throw InputError(std::string("llama: ") + what + " must be positive, got " + std::to_string(v));
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_kv_head", n_kv_head);
  positive("n_embd", n_embd);
  positive("ffn_hidden", ffn_hidden);
  positive("vocab_size", vocab_size);
  positive("context", context);
  if (n_embd % n_head != 0 || head_size() % 2 != 0) {
    throw InputError("llama: n_embd (" + std::to_string(n_embd) + ") must be n_head (" +
                     std::to_string(n_head) + ") times an even head size");
  }
  if (n_head % n_kv_head != 0) {
    throw InputError("llama: n_head (" + std::to_string(n_head) + ") must be a multiple of n_kv_head (" +
                     std::to_string(n_kv_head) + ")");
  }
  if (!(rope_base > 1.0f)) throw InputError("llama: rope_base must be greater than 1");
  // Every matmul dimension (up to 2F and V) must fit an int for the backend.
  if (n_embd > (1 << 26) || ffn_hidden > (1 << 29) || vocab_size > (1 << 30)) {
    throw InputError("llama: n_embd, ffn_hidden or vocab_size too large");
  }
}

std::size_t LlamaConfig::block_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  const std::size_t F = static_cast<std::size_t>(ffn_hidden);
  const std::size_t QW = static_cast<std::size_t>(n_head) * static_cast<std::size_t>(head_size());
  return static_cast<std::size_t>(qkv_width()) * C + C * QW + 3 * C * F + 2 * C;
}

std::size_t LlamaConfig::num_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  const std::size_t per_layer = block_params();
  const std::size_t embed = static_cast<std::size_t>(vocab_size) * C;
  return embed * (tied ? 1 : 2) + static_cast<std::size_t>(n_layer) * per_layer + C;
}

std::string LlamaConfig::describe() const {
  std::ostringstream s;
  s << "L=" << n_layer << " H=" << n_head << "/" << n_kv_head << " C=" << n_embd << " F=" << ffn_hidden
    << " V=" << vocab_size << " T=" << context << (tied ? " tied" : "");
  return s.str();
}

std::vector<LlamaPreset> LlamaConfig::presets() {
  // The published shapes (each model's config.json): SmolLM2-135M 134,515,008 parameters, Llama-3.2-1B
  // 1,235,814,400, Llama-3-8B 8,030,261,248, Llama-3-70B 70,553,706,496. Llama 3.2's long-context RoPE
  // frequency scaling is not modelled (plain RoPE with its base); it changes no shape or cost.
  return {
      {"llama-tiny", {2, 4, 2, 32, 48, 256, 32, 10000.0f, false}, "tests and fixtures (byte-level, untied)"},
      {"llama-mini",
       {4, 4, 2, 256, 688, 256, 256, 10000.0f, true},
       "byte-level, trains in minutes on 2 cores"},
      {"smollm2-135m", {30, 9, 3, 576, 1536, 49152, 8192, 100000.0f, true}, "SmolLM2-135M"},
      {"llama-3.2-1b", {16, 32, 8, 2048, 8192, 128256, 131072, 500000.0f, true}, "Llama-3.2-1B"},
      {"llama-3-8b", {32, 32, 8, 4096, 14336, 128256, 8192, 500000.0f, false}, "Llama-3-8B"},
      {"llama-3-70b", {80, 64, 8, 8192, 28672, 128256, 8192, 500000.0f, false}, "Llama-3-70B"},
  };
}

LlamaConfig LlamaConfig::preset(const std::string& name) {
  std::string valid;
  for (const LlamaPreset& p : presets()) {
    if (p.name == name) return p.config;
    valid += (valid.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown model '" + name + "' (valid: " + valid + ")");
}

bool LlamaConfig::is_preset(const std::string& name) {
  for (const LlamaPreset& p : presets())
    if (p.name == name) return true;
  return false;
}

}  // namespace tt
