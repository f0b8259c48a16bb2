// Helpers shared by the transformer tests (GPT-2, BERT): fixture loading and tolerant comparisons.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/model.h"

namespace tt::fixture_test {

// Tests run with the repository root as working directory (tt_test). dir: a folder of tests/fixtures.
inline std::string fixture_path(const std::string& name, const std::string& dir = "gpt2_tiny") {
  return "tests/fixtures/" + dir + "/" + name;
}

template <typename T>
std::vector<T> read_bin(const std::string& name, const std::string& dir = "gpt2_tiny") {
  std::ifstream f(fixture_path(name, dir), std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing fixture " << fixture_path(name, dir);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size() % sizeof(T), 0u) << name;
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline nlohmann::json read_manifest(const std::string& dir = "gpt2_tiny") {
  std::ifstream f(fixture_path("manifest.json", dir));
  EXPECT_TRUE(f.good()) << "missing fixture manifest";
  return nlohmann::json::parse(f);
}

// Largest violation of |a - b| <= atol + rtol * |b| (<= 0 means all within tolerance), with the index.
struct Mismatch {
  double excess = -1;
  std::size_t index = 0;
  double got = 0;
  double want = 0;
};
inline Mismatch worst(const float* got, const float* want, std::size_t n, double rtol, double atol) {
  Mismatch m;
  m.excess = -1e300;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i];
    const double w = want[i];
    const double e = std::isfinite(g) ? std::abs(g - w) - (atol + rtol * std::abs(w)) : 1e300;
    if (e > m.excess) m = {e, i, g, w};
  }
  return m;
}

// The files of one transformer fixture folder (tools/fixtures/make_{gpt2,bert}_fixtures.py), and the
// model shape its manifest records, as a GPT-2 or BERT configuration.
struct TokenFixture {
  explicit TokenFixture(const std::string& dir)
      : manifest(read_manifest(dir)),
        params(read_bin<float>("params.bin", dir)),
        grads(read_bin<float>("grads.bin", dir)),
        logits(read_bin<float>("logits.bin", dir)),
        final_params(read_bin<float>("final_params.bin", dir)),
        tokens(read_bin<int32_t>("tokens.bin", dir)),
        targets(read_bin<int32_t>("targets.bin", dir)),
        B(manifest.at("B").get<int>()),
        T(manifest.at("T").get<int>()) {}
  nlohmann::json manifest;
  std::vector<float> params, grads, logits, final_params;
  std::vector<int32_t> tokens, targets;
  int B, T;

  template <typename Config>
  Config config() const {
    const auto& c = manifest.at("config");
    Config cfg;
    cfg.n_layer = c.at("n_layer").get<int>();
    cfg.n_head = c.at("n_head").get<int>();
    cfg.n_embd = c.at("n_embd").get<int>();
    cfg.vocab_size = c.at("vocab_size").get<int>();
    cfg.context = c.at("context").get<int>();
    return cfg;
  }
  Batch batch() const {
    Batch b;
    b.B = B;
    b.T = T;
    b.tokens = tokens;
    b.targets = targets;
    return b;
  }
};

// Copies a flat host parameter vector into the model.
inline void load_params(Backend& be, Model& model, const std::vector<float>& flat) {
  ASSERT_EQ(flat.size(), model.num_params());
  be.copy_to_device(model.param_data(), flat.data(), flat.size() * sizeof(float));
}

inline std::vector<float> to_host(Backend& be, const float* p, std::size_t n) {
  std::vector<float> h(n);
  be.copy_to_host(h.data(), p, n * sizeof(float));
  return h;
}

inline const ParamInfo* param_named(const Model& model, const std::string& name) {
  for (const ParamInfo& p : model.params()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// Every gradient tensor of the manifest's table against the reference flat gradient `want`, mapped by
// name (so a padded layout compares too): |got - want| <= 1e-4 max|want of the tensor| + 1e-3 |want|.
inline void expect_grads_match(const Model& model, const std::vector<float>& got,
                               const nlohmann::json& manifest, const std::vector<float>& want) {
  for (const auto& rp : manifest.at("params")) {
    const std::string name = rp.at("name").get<std::string>();
    const ParamInfo* p = param_named(model, name);
    ASSERT_NE(p, nullptr) << "the model has no tensor " << name;
    const float* w = want.data() + rp.at("offset").get<std::size_t>();
    const std::size_t n = rp.at("numel").get<std::size_t>();
    double scale = 0;
    for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(static_cast<double>(w[i])));
    const auto m = worst(got.data() + p->offset, w, n, 1e-3, 1e-4 * scale);
    EXPECT_LE(m.excess, 0.0) << name << "[" << m.index << "]: got " << m.got << " want " << m.want
                             << " (tensor max |grad| " << scale << ")";
  }
}

// The model's parameter table equals the manifest's: names, offsets, shapes and decay, in order.
inline void expect_layout_matches(const Model& model, const nlohmann::json& manifest) {
  const auto& ps = model.params();
  ASSERT_EQ(manifest.at("params").size(), ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto& rp = manifest.at("params")[i];
    EXPECT_EQ(rp.at("name").get<std::string>(), ps[i].name);
    EXPECT_EQ(rp.at("offset").get<std::size_t>(), ps[i].offset) << ps[i].name;
    EXPECT_EQ(rp.at("shape").get<std::vector<int64_t>>(), ps[i].shape) << ps[i].name;
    EXPECT_EQ(rp.at("decay").get<bool>(), ps[i].decay) << ps[i].name;
  }
}

// Runs backward() (after the caller's forward) recording each readiness signal `from` and the
// gradients [from, end) at that moment; checks that the signals strictly descend to 0 and that
// "final" means final: nothing after a signal changes those gradients. Returns the signals for the
// family's own checks of where they fall.
inline std::vector<std::size_t> backward_ready_signals(Backend& be, Model& model) {
  std::vector<std::size_t> froms;
  std::vector<std::vector<float>> snapshots;  // grads [from, end) at the moment of the signal
  model.backward([&](std::size_t from) {
    be.synchronize();
    froms.push_back(from);
    snapshots.push_back(to_host(be, model.grad_data() + from, model.num_params() - from));
  });
  EXPECT_FALSE(froms.empty());
  if (froms.empty()) return froms;
  EXPECT_EQ(froms.back(), 0u);
  for (std::size_t i = 1; i < froms.size(); ++i) EXPECT_LT(froms[i], froms[i - 1]);
  const std::vector<float> grads = to_host(be, model.grad_data(), model.num_params());
  for (std::size_t i = 0; i < froms.size(); ++i) {
    EXPECT_TRUE(std::equal(snapshots[i].begin(), snapshots[i].end(),
                           grads.begin() + static_cast<std::ptrdiff_t>(froms[i])))
        << "gradients above " << froms[i] << " changed after they were signalled final";
  }
  return froms;
}

// Central differences of the model's loss on `batch`, in float32 at its current parameters, at the entry
// with the largest gradient of each named tensor (whose gradient must not be zero: that would check
// nothing). h = 1e-2 keeps rounding noise (~1e-7 / h) and the curvature term (~h^2) both well below
// the tolerance |fd - g| <= 2e-4 + 2e-2 |g|.
inline void expect_finite_differences(Backend& be, Model& model, const Batch& batch,
                                      const std::vector<std::string>& names) {
  model.zero_grad();
  (void)model.forward(batch);
  model.backward({});
  const auto grads = to_host(be, model.grad_data(), model.num_params());
  auto params = to_host(be, model.param_data(), model.num_params());
  const float h = 1e-2f;
  for (const std::string& name : names) {
    const ParamInfo* p = param_named(model, name);
    ASSERT_NE(p, nullptr) << "the model has no tensor " << name;
    std::size_t at = p->offset;
    for (std::size_t i = p->offset; i < p->offset + p->numel; ++i) {
      if (std::abs(grads[i]) > std::abs(grads[at])) at = i;
    }
    const float saved = params[at];
    auto loss_at = [&](float value) {
      params[at] = value;
      be.copy_to_device(model.param_data(), params.data(), params.size() * sizeof(float));
      return static_cast<double>(model.forward(batch));
    };
    const double fd = (loss_at(saved + h) - loss_at(saved - h)) / (2.0 * static_cast<double>(h));
    loss_at(saved);
    const double g = grads[at];
    EXPECT_GT(std::abs(g), 0.0) << name << ": a gradient of zero checks nothing";
    EXPECT_NEAR(fd, g, 2e-4 + 2e-2 * std::abs(g)) << name << " entry " << at - p->offset;
  }
}

// The manifest's AdamW trajectory on one batch with the trainer's policy (decay only on ParamInfo.decay
// tensors, no clipping), each step's loss checked against adamw_losses (relative 1e-4). Returns the
// final parameters and the learning rate.
inline std::pair<std::vector<float>, float> run_adamw(Backend& be, Model& model, const Batch& batch,
                                                      const nlohmann::json& manifest) {
  const auto& adamw = manifest.at("adamw");
  AdamWConfig base;
  base.lr = adamw.at("lr").get<float>();
  base.beta1 = adamw.at("beta1").get<float>();
  base.beta2 = adamw.at("beta2").get<float>();
  base.eps = adamw.at("eps").get<float>();
  const float wd = adamw.at("weight_decay").get<float>();
  DeviceBuffer m(be, model.num_params() * sizeof(float));  // zero-filled by allocate()
  DeviceBuffer v(be, model.num_params() * sizeof(float));
  const auto want = manifest.at("adamw_losses").get<std::vector<double>>();
  EXPECT_EQ(want.size(), 10u);
  for (std::size_t step = 1; step <= want.size(); ++step) {
    model.zero_grad();
    EXPECT_NEAR(model.forward(batch), want[step - 1], 1e-4 * want[step - 1]) << "step " << step;
    model.backward({});
    for (const ParamInfo& p : model.params()) {
      AdamWConfig cfg = base;
      cfg.weight_decay = p.decay ? wd : 0.0f;
      be.adamw_update(model.param_data() + p.offset, model.grad_data() + p.offset, m.as<float>() + p.offset,
                      v.as<float>() + p.offset, p.numel, cfg, 1.0f, static_cast<long>(step));
    }
  }
  return {to_host(be, model.param_data(), model.num_params()), base.lr};
}

}  // namespace tt::fixture_test
