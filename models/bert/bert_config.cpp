// BertConfig: validation, parameter counting and the named presets.
#include <sstream>

#include "base/error.h"
#include "models/bert/bert.h"

namespace tt {

void BertConfig::validate() const {
  auto positive = [](const char* what, int v) {
    if (v <= 0)
      throw InputError(std::string("bert: ") + what + " must be positive, got " + std::to_string(v));
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  positive("vocab_size", vocab_size);
  positive("context", context);
  if (vocab_size < 2) throw InputError("bert: vocab_size must leave room for [MASK] (at least 2)");
  if (n_embd % n_head != 0) {
    throw InputError("bert: n_embd (" + std::to_string(n_embd) + ") must be divisible by n_head (" +
                     std::to_string(n_head) + ")");
  }
  if (n_embd > (1 << 26) || vocab_size > (1 << 30)) throw InputError("bert: n_embd or vocab_size too large");
}

std::size_t BertConfig::block_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  // qkv 3C^2+3C, output dense C^2+C, intermediate 4C^2+4C, output 4C^2+C, two LayerNorms 4C.
  return 12 * C * C + 13 * C;
}

std::size_t BertConfig::num_params() const {
  const std::size_t C = static_cast<std::size_t>(n_embd);
  const std::size_t V = static_cast<std::size_t>(vocab_size);
  const std::size_t per_layer = block_params();
  const std::size_t embeddings = (V + static_cast<std::size_t>(context) + kTypeVocab) * C + 2 * C;
  const std::size_t head = C * C + C + 2 * C + V;  // transform dense, its LayerNorm, decoder bias
  return embeddings + static_cast<std::size_t>(n_layer) * per_layer + head;
}

std::string BertConfig::describe() const {
  std::ostringstream s;
  s << "L=" << n_layer << " H=" << n_head << " C=" << n_embd << " V=" << vocab_size << " T=" << context;
  return s.str();
}

std::vector<BertPreset> BertConfig::presets() {
  // The published shapes (Devlin et al. 2019, Table 1 footnote; HF model cards) with the 30522-token
  // WordPiece vocabulary and 512 positions: 109,514,298 and 335,174,458 parameters, HF
  // BertForMaskedLM's counts (BertModel's 110M / 340M include the pooler and not the MLM head).
  // The byte-level presets add [MASK] as id 256.
  return {
      {"bert-tiny", {2, 2, 32, 257, 32}, "tests and fixtures (byte-level + [MASK])"},
      {"bert-mini", {4, 4, 256, 257, 256}, "byte-level + [MASK], trains in minutes on 2 cores"},
      {"bert-base", {12, 12, 768, 30522, 512}, "BERT-Base (110M)"},
      {"bert-large", {24, 16, 1024, 30522, 512}, "BERT-Large (340M)"},
  };
}

bool BertConfig::is_preset(const std::string& name) {
  for (const BertPreset& p : presets()) {
    if (p.name == name) return true;
  }
  return false;
}

BertConfig BertConfig::preset(const std::string& name) {
  std::string valid;
  for (const BertPreset& p : presets()) {
    if (p.name == name) return p.config;
    valid += (valid.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown model '" + name + "' (valid: " + valid + ")");
}

}  // namespace tt
