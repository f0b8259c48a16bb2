#include "study/emulated_gpt2.h"

#include "models/gpt2/gpt2.h"

namespace tt::study {

EmulatedModelConfig emulated_model_config(const nlohmann::json& mc, const EmulatedGpu& gpu) {
  Gpt2Config c;
  c.n_layer = mc.at("n_layer").get<int>();
  c.n_head = mc.at("n_head").get<int>();
  c.n_embd = mc.at("n_embd").get<int>();
  c.vocab_size = mc.at("vocab").get<int>();
  c.context = mc.at("context").get<int>();
  c.validate();
  EmulatedModelConfig e;
  e.name = mc.value("name", "gpt2");
  e.params = Gpt2::param_table(c);
  e.num_params = c.num_params();
  e.flops = [c](int B, int T) { return Gpt2::flops_for(c, B, T); };
  e.activation_bytes = [c](int B, int T) { return static_cast<double>(Gpt2::activation_bytes_for(c, B, T)); };
  e.gpu = gpu;
  e.grad_backing_bytes = default_grad_backing_bytes(e.num_params);
  return e;
}

}  // namespace tt::study
