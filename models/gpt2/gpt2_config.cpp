// Gpt2Config: validation, parameter counting and the named presets.
#include <sstream>

#include "base/error.h"
#include "models/gpt2/gpt2.h"

namespace tt {

int Gpt2Config::padded_vocab() const {
  const long long m = vocab_multiple;
  return static_cast<int>((vocab_size + m - 1) / m * m);
}

void Gpt2Config::validate() const {
  auto positive = [](const char* what, int v) {
    if (v <= 0)
      throw InputError(std::string("gpt2: ") + what + " must be positive, got " + std::to_string(v));
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  positive("vocab_size", vocab_size);
  positive("context", context);
  positive("vocab_multiple", vocab_multiple);
  if (n_embd % n_head != 0) {
    throw InputError("gpt2: n_embd (" + std::to_string(n_embd) + ") must be divisible by n_head (" +
                     std::to_string(n_head) + ")");
  }
  // Every matmul dimension (up to 4C and Vp) and every B*T count must fit an int for the backend.
  if (n_embd > (1 << 26) || static_cast<long long>(vocab_size) + vocab_multiple > (1LL << 31) - 1) {
    throw InputError("gpt2: n_embd or vocab_size too large");
  }
}

std::size_t Gpt2Config::block_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  return 12 * C * C + 13 * C;  // qkv 3C^2+3C, proj C^2+C, fc 4C^2+4C, fcproj 4C^2+C, 2 LN 4C
}

std::size_t Gpt2Config::num_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  return static_cast<std::size_t>(padded_vocab()) * C + static_cast<std::size_t>(context) * C +
         static_cast<std::size_t>(n_layer) * block_params() + 2 * C;
}

std::string Gpt2Config::describe() const {
  std::ostringstream s;
  s << "L=" << n_layer << " H=" << n_head << " C=" << n_embd << " V=" << vocab_size << " T=" << context;
  if (padded_vocab() != vocab_size) s << " Vp=" << padded_vocab();
  return s.str();
}

std::vector<Gpt2Preset> Gpt2Config::presets() {
  // The published shapes (Radford et al. 2019, HF model cards) with the 50257-token BPE vocabulary and
  // 1024 context; tied embeddings give 124,439,808 / 354,823,168 / 774,030,080 / 1,557,611,200.
  return {
      {"gpt2-tiny", {2, 2, 32, 256, 32}, "tests and fixtures (byte-level)"},
      {"gpt2-mini", {4, 4, 256, 256, 256}, "byte-level, trains in minutes on 2 cores"},
      {"gpt2", {12, 12, 768, 50257, 1024}, "GPT-2 small (124M)"},
      {"gpt2-medium", {24, 16, 1024, 50257, 1024}, "GPT-2 medium (350M)"},
      {"gpt2-large", {36, 20, 1280, 50257, 1024}, "GPT-2 large (774M)"},
      {"gpt2-xl", {48, 25, 1600, 50257, 1024}, "GPT-2 XL (1558M)"},
  };
}

Gpt2Config Gpt2Config::preset(const std::string& name) {
  std::string valid;
  for (const Gpt2Preset& p : presets()) {
    if (p.name == name) return p.config;
    valid += (valid.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown model '" + name + "' (valid: " + valid + ")");
}

}  // namespace tt
