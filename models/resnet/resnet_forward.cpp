// ResNet forward pass, prediction and evaluation.
#include <algorithm>

#include "base/error.h"
#include "models/resnet/resnet.h"

namespace tt {

namespace {
constexpr float kBnMomentum = 0.1f;  // PyTorch's defaults
constexpr float kBnEps = 1e-5f;
}  // namespace

void Resnet::convbn_forward(ResnetConvBn& u, float* bn_out, bool relu, int B) {
  float* p = params_buf_.as<float>();
  float* st = buffers_buf_.as<float>();
  Conv2dShape s = u.conv;
  s.B = B;
  const int HW = s.OH() * s.OW();
  backend_.conv2d_forward(u.conv_out, u.in, p + u.w, nullptr, ws_buf_.as<float>(), s);
  backend_.batchnorm_forward(bn_out, u.mean, u.rstd, st + u.run_mean, st + u.run_var, u.conv_out, p + u.bn_w,
                             p + u.bn_b, B, s.OC, HW, kBnMomentum, kBnEps, training_);
  if (relu) backend_.relu_forward(bn_out, bn_out, static_cast<std::size_t>(B) * u.out_numel());
}

void Resnet::run_forward(const Batch& batch, bool with_loss) {
  const int B = batch.B;
  const std::size_t per_image = static_cast<std::size_t>(cfg_.in_channels) *
                                static_cast<std::size_t>(cfg_.image_size) *
                                static_cast<std::size_t>(cfg_.image_size);
  if (B <= 0) throw InputError("resnet: empty batch");
  if (batch.images.size() != static_cast<std::size_t>(B) * per_image) {
    throw InputError("resnet: the batch holds " +
                     std::to_string(batch.images.size() / static_cast<std::size_t>(B)) +
                     " floats per image but " + name_ + " expects " + std::to_string(cfg_.in_channels) + "x" +
                     std::to_string(cfg_.image_size) + "x" + std::to_string(cfg_.image_size) +
                     "; configure the model's channels and image size to match the data");
  }
  if (with_loss) {
    if (batch.targets.size() != static_cast<std::size_t>(B)) {
      throw InputError("resnet: the batch has " + std::to_string(batch.targets.size()) + " labels for " +
                       std::to_string(B) + " images");
    }
    for (int32_t y : batch.targets) {
      if (y < 0 || y >= cfg_.num_classes) {
        throw InputError("resnet: label " + std::to_string(y) + " is outside [0, " +
                         std::to_string(cfg_.num_classes) +
                         "); configure the model's class count to match the data");
      }
    }
  }
  reserve(B);
  have_forward_ = false;
  cur_B_ = B;
  backend_.copy_to_device(v_.images, batch.images.data(), batch.images.size() * sizeof(float));
  if (with_loss)
    backend_.copy_to_device(v_.labels, batch.targets.data(), batch.targets.size() * sizeof(int32_t));
  float* p = params_buf_.as<float>();

  // Stem: conv1 + bn1 + ReLU (+ maxpool).
  convbn_forward(lay_.stem, lay_.stem.out, true, B);
  if (lay_.maxpool) {
    Pool2dShape ps = lay_.pool;
    ps.B = B;
    backend_.maxpool2d_forward(v_.pooled, v_.argmax, lay_.stem.out, ps);
  }

  // Blocks: the main path's last bn writes the block output, the shortcut is added, then ReLU.
  for (ResnetBlockLayout& blk : lay_.blocks) {
    const std::size_t nu = blk.units.size();
    for (std::size_t i = 0; i < nu; ++i) convbn_forward(blk.units[i], blk.units[i].out, i + 1 < nu, B);
    ResnetConvBn& last = blk.units.back();
    const std::size_t n = static_cast<std::size_t>(B) * last.out_numel();
    if (blk.has_down) {
      convbn_forward(blk.down, v_.scratch, false, B);
      backend_.accumulate(last.out, v_.scratch, n);
    } else {
      backend_.accumulate(last.out, blk.units.front().in, n);
    }
    backend_.relu_forward(last.out, last.out, n);
  }

  // Head: global average pool, fc, softmax cross-entropy.
  const float* trunk = lay_.blocks.back().units.back().out;  // (B, feat_C, Hf, Wf)
  backend_.global_avgpool_forward(v_.feats, trunk, B, lay_.feat_C, lay_.feat_HW);
  backend_.matmul_forward(v_.logits, v_.feats, p + lay_.fc_w, p + lay_.fc_b, B, lay_.feat_C,
                          cfg_.num_classes);
  if (with_loss) {
    backend_.softmax_xent_forward(v_.losses, v_.probs, v_.logits, v_.labels, B, cfg_.num_classes,
                                  cfg_.num_classes);
  }
}

float Resnet::forward(const Batch& batch) {
  run_forward(batch, true);
  have_forward_ = training_;
  return static_cast<float>(backend_.mean(v_.losses, static_cast<std::size_t>(batch.B)));
}

std::vector<int32_t> Resnet::predict(const Batch& batch) {
  run_forward(batch, false);
  const int B = batch.B;
  const auto K = static_cast<std::size_t>(cfg_.num_classes);
  std::vector<float> logits(static_cast<std::size_t>(B) * K);  // (B, classes)
  backend_.copy_to_host(logits.data(), v_.logits, logits.size() * sizeof(float));
  std::vector<int32_t> cls(static_cast<std::size_t>(B));
  for (std::size_t b = 0; b < cls.size(); ++b) {
    const float* row = logits.data() + b * K;
    cls[b] = static_cast<int32_t>(std::max_element(row, row + K) - row);  // first maximum
  }
  return cls;
}

EvalCounts Resnet::evaluate(const Batch& batch) {
  run_forward(batch, true);
  const int B = batch.B;
  const auto K = static_cast<std::size_t>(cfg_.num_classes);
  std::vector<float> logits(static_cast<std::size_t>(B) * K);  // (B, classes)
  std::vector<float> losses(static_cast<std::size_t>(B));
  backend_.copy_to_host(logits.data(), v_.logits, logits.size() * sizeof(float));
  backend_.copy_to_host(losses.data(), v_.losses, losses.size() * sizeof(float));
  EvalCounts r;
  r.count = B;
  r.correct = 0;
  for (std::size_t b = 0; b < losses.size(); ++b) {
    const float* row = logits.data() + b * K;
    const auto cls = static_cast<int32_t>(std::max_element(row, row + K) - row);
    r.correct += cls == batch.targets[b] ? 1 : 0;
    r.loss_sum += static_cast<double>(losses[b]);
  }
  return r;
}

}  // namespace tt
