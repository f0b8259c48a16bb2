// CPU backend: optimizer updates (AdamW, SGD with momentum), elementwise over the flat parameter arena.
#include <cmath>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/cpu_common.h"

namespace tt {

using cpu::kParallelMin;

// Same operations, in the same order, as torch.optim.AdamW's single-tensor path, so a PyTorch
// fixture matches to float rounding:
//   p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// which is p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p) with the bias-corrected mhat, vhat.
void CpuBackend::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                              const AdamWConfig& cfg, float grad_scale, long step) {
  // Scalars in double, as PyTorch computes them in Python floats.
  const double t = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(static_cast<double>(cfg.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(cfg.beta2), t);
  const float step_size = static_cast<float>(static_cast<double>(cfg.lr) / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay = 1.0f - cfg.lr * cfg.weight_decay;
  const float b1 = cfg.beta1;
  const float b2 = cfg.beta2;
  // 1 - beta in double, then rounded once: (1.0f - 0.999f) in float is 1.3e-5 off in relative terms.
  const float one_minus_b1 = static_cast<float>(1.0 - static_cast<double>(b1));
  const float one_minus_b2 = static_cast<float>(1.0 - static_cast<double>(b2));
  const float eps = cfg.eps;
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) {
    const float g = grads[i] * grad_scale;
    const float mi = b1 * m[i] + one_minus_b1 * g;
    const float vi = b2 * v[i] + one_minus_b2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bc2_sqrt + eps;
    params[i] = params[i] * decay - step_size * (mi / denom);
  }
}

// torch.optim.SGD with dampening 0, no Nesterov: g += wd*p; buf = momentum*buf + g; p -= lr*buf.
// With buf zero-initialised the first step gives buf = g, as PyTorch's "buf = g.clone()".
void CpuBackend::sgd_update(float* params, const float* grads, float* momentum_buf, std::size_t n,
                            const SgdConfig& cfg, float grad_scale) {
  const float lr = cfg.lr;
  const float mom = cfg.momentum;
  const float wd = cfg.weight_decay;
  const auto len = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (len >= kParallelMin)
  for (std::ptrdiff_t i = 0; i < len; ++i) {
    const float g = grads[i] * grad_scale + wd * params[i];
    const float buf = mom * momentum_buf[i] + g;
    momentum_buf[i] = buf;
    params[i] -= lr * buf;
  }
}

}  // namespace tt
