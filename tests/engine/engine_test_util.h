// Shared helpers for the engine tests: scratch directories, a small real model, byte flipping.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/optimizer.h"
#include "engine/param_chunks.h"
#include "engine/trainer.h"
#include "models/gpt2/gpt2.h"
#include "tee/bytes.h"
#include "tests/common/temp_dir.h"

namespace tt::enginetest {

using ::tt::testing::TempDir;  // tests/common/temp_dir.h

inline std::vector<char> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void flip_byte(const std::filesystem::path& p, std::uint64_t offset) {
  std::fstream io(p, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(io.get());
  io.seekp(static_cast<std::streamoff>(offset));
  io.put(static_cast<char>(c ^ 0x01));
}

// gpt2-tiny on the CPU backend, initialised, with AdamW state from one real step (so the optimizer
// file holds non-zero moments).
struct TinyRun {
  std::unique_ptr<Backend> backend = make_cpu_backend(1);
  Gpt2 model{*backend, Gpt2Config::preset("gpt2-tiny"), "gpt2-tiny"};
  std::unique_ptr<Optimizer> opt;

  explicit TinyRun(uint64_t seed, bool step = true) {
    model.init_params(seed);
    opt = make_optimizer(*backend, OptimizerConfig{}, model.num_params());
    if (!step) return;
    Batch b;
    b.B = 2;
    b.T = 8;
    for (int i = 0; i < 16; ++i) {
      b.tokens.push_back((i * 7 + 3) % 256);
      b.targets.push_back((i * 5 + 1) % 256);
    }
    model.reserve(2, 8);
    model.zero_grad();
    model.forward(b);
    model.backward({});
    opt->step(model, 1e-3f, 1.0f, 1);
  }
  std::vector<float> params() {
    std::vector<float> h(model.num_params());
    backend->copy_to_host(h.data(), model.param_data(), h.size() * sizeof(float));
    return h;
  }
  std::vector<float> opt_state() {
    std::vector<float> h(opt->state_floats());
    backend->copy_to_host(h.data(), opt->state_data(), h.size() * sizeof(float));
    return h;
  }
  CheckpointMeta meta(long step) {
    CheckpointMeta m;
    m.step = step;
    m.samples_consumed = static_cast<uint64_t>(step) * 16;
    m.seed = 7;
    m.params_sha256 = params_sha256(*backend, model);
    m.config = {{"model", "gpt2-tiny"}};
    return m;
  }
};

}  // namespace tt::enginetest
