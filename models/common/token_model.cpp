#include "models/common/token_model.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "models/common/model_layout.h"

namespace tt {

TokenModel::TokenModel(Backend& backend, std::string family, std::string name, std::vector<ParamInfo> table,
                       std::size_t expected_floats)
    : backend_(backend), family_(std::move(family)), name_(std::move(name)), params_(std::move(table)) {
  num_params_ = params_.empty() ? 0 : params_.back().offset + params_.back().numel;
  if (num_params_ != expected_floats) {
    throw RunError(family_ + ": parameter table (" + std::to_string(num_params_) +
                   " floats) disagrees with num_params() (" + std::to_string(expected_floats) + ")");
  }
  params_buf_ = DeviceBuffer(backend_, num_params_ * sizeof(float));
  grads_buf_ = DeviceBuffer(backend_, num_params_ * sizeof(float));
}

void check_token_ids(const std::vector<int32_t>& v, std::size_t n, int V, const std::string& family,
                     const char* what) {
  if (v.size() != n) {
    throw InputError(family + ": " + what + " has " + std::to_string(v.size()) + " entries, expected " +
                     std::to_string(n));
  }
  for (int32_t t : v) {
    if (t < 0 || t >= V) {
      throw InputError(family + ": " + what + " id " + std::to_string(t) + " outside the vocabulary [0, " +
                       std::to_string(V) + ")");
    }
  }
}

TransformerGrads TransformerGrads::carve(float* dacts, std::size_t N, std::size_t C, std::size_t att) {
  return carve(dacts, N, C, att, 4 * C);
}

TransformerGrads TransformerGrads::carve(float* dacts, std::size_t N, std::size_t C, std::size_t att,
                                         std::size_t wide) {
  TransformerGrads g;
  ArenaCarver<float> c(dacts);
  g.dresidual = c.take(N * C);
  g.dbtc = c.take(N * C);
  g.dbt4c_a = c.take(N * wide);
  g.dbt4c_b = c.take(N * wide);
  g.datt = c.take(att);
  g.dacts_floats = c.used();
  return g;
}

void TokenModel::zero_grad() {
  backend_.fill(grads_buf_.as<float>(), 0.0f, num_params_);
}

void TokenModel::reserve(int B, int T) {
  const int context = this->context();
  if (B <= 0 || T <= 0) {
    throw InputError(family_ + ": batch shape must be positive, got B=" + std::to_string(B) +
                     " T=" + std::to_string(T));
  }
  if (T > context) {
    throw InputError(family_ + ": sequence length " + std::to_string(T) + " exceeds the model context " +
                     std::to_string(context));
  }
  // The backend takes row counts as int: B * T (and B * T * 4C element counts in size_t) must fit.
  if (static_cast<long long>(B) * T > (1LL << 31) - 1) {
    throw InputError(family_ + ": batch of " + std::to_string(B) + " x " + std::to_string(T) +
                     " tokens is too large");
  }
  if (B <= res_B_ && T <= res_T_) return;
  const int nB = std::max(B, res_B_);
  const int nT = std::max(T, res_T_);
  const auto [acts, dacts] = arena_floats(nB, nT);
  // Free the old arenas first so peak memory is one set, not two.
  acts_buf_.reset();
  dacts_buf_.reset();
  tokens_buf_.reset();
  acts_buf_ = DeviceBuffer(backend_, acts * sizeof(float));
  dacts_buf_ = DeviceBuffer(backend_, dacts * sizeof(float));
  const std::size_t N = static_cast<std::size_t>(nB) * static_cast<std::size_t>(nT);
  tokens_buf_ = DeviceBuffer(backend_, 2 * N * sizeof(int32_t));  // token_arena_bytes counts it
  tokens_ = tokens_buf_.as<int32_t>();
  targets_ = tokens_ + N;
  res_B_ = nB;
  res_T_ = nT;
  carve_views();
  have_forward_ = false;
}

const ParamInfo& TokenModel::param(const std::string& pname) const {
  for (const ParamInfo& p : params_) {
    if (p.name == pname) return p;
  }
  throw InputError(family_ + ": no parameter named '" + pname + "'");
}

std::vector<float> TokenModel::last_position_logits(const float* hidden, float* scratch, float* logits,
                                                    const float* head, int B, int T, int C, int V, int Vp) {
  const std::size_t row = static_cast<std::size_t>(C) * sizeof(float);
  for (int b = 0; b < B; ++b) {
    const std::size_t src =
        (static_cast<std::size_t>(b) * static_cast<std::size_t>(T) + static_cast<std::size_t>(T - 1)) *
        static_cast<std::size_t>(C);
    backend_.copy(scratch + static_cast<std::size_t>(b) * static_cast<std::size_t>(C), hidden + src, row);
  }
  backend_.matmul_forward(logits, scratch, head, nullptr, B, C, Vp);  // (B, Vp)
  std::vector<float> padded(static_cast<std::size_t>(B) * static_cast<std::size_t>(Vp));
  backend_.copy_to_host(padded.data(), logits, padded.size() * sizeof(float));
  std::vector<float> out(static_cast<std::size_t>(B) * static_cast<std::size_t>(V));
  for (int b = 0; b < B; ++b) {
    const float* r = padded.data() + static_cast<std::size_t>(b) * static_cast<std::size_t>(Vp);
    std::copy(r, r + V, out.begin() + static_cast<std::ptrdiff_t>(b) * V);
  }
  return out;
}

std::vector<ParamUnit> TokenModel::block_units(std::size_t first, std::size_t stride, int n) {
  std::vector<ParamUnit> out;
  for (int l = 0; l < n; ++l) {
    const std::size_t begin = first + static_cast<std::size_t>(l) * stride;
    out.push_back(ParamUnit{.begin = begin, .end = begin + stride});
  }
  return out;
}

}  // namespace tt
