// ResNet backward pass: the exact reverse of resnet_forward.cpp.
//
// Activation gradients live in five buffers of the largest activation size, (B, max_act) each:
//   P  d(block output) on entry to a block, d(block input) on exit (so it walks down the network)
//   Q  d(pre-ReLU block sum): flows into the main path's last bn and into the shortcut
//   R  d(conv output) of the unit being processed
//   T  d(unit input) inside the main path
//   U  d(bn output) of the previous unit (T through the ReLU mask)
// Every backend *_backward op accumulates, so each buffer is zeroed right before the op that produces it.
//
// Gradient readiness: parameters are in forward order, so on_ready(from) is called after the classifier
// (fc), after each block (its first parameter), and with 0 after the stem.
#include "base/error.h"
#include "models/resnet/resnet.h"

namespace tt {

void Resnet::convbn_backward(ResnetConvBn& u, float* dinp, float* dconv, const float* dbn_out, int B) {
  const float* p = params_buf_.as<float>();
  float* g = grads_buf_.as<float>();
  Conv2dShape s = u.conv;
  s.B = B;
  const int HW = s.OH() * s.OW();
  backend_.fill(dconv, 0.0f, static_cast<std::size_t>(B) * u.out_numel());
  backend_.batchnorm_backward(dconv, g + u.bn_w, g + u.bn_b, dbn_out, u.conv_out, p + u.bn_w, u.mean, u.rstd,
                              B, s.OC, HW);
  backend_.conv2d_backward(dinp, g + u.w, nullptr, dconv, u.in, p + u.w, ws_buf_.as<float>(), s);
}

void Resnet::backward(const GradReadyFn& on_ready) {
  if (!have_forward_) {
    throw RunError("resnet: backward() needs a preceding training-mode forward(batch)");
  }
  auto ready = [&on_ready](std::size_t from) {
    if (on_ready) on_ready(from);
  };
  const int B = cur_B_;
  const auto nB = static_cast<std::size_t>(B);
  const float* p = params_buf_.as<float>();
  float* g = grads_buf_.as<float>();
  float* P = v_.dbuf[0];
  float* Q = v_.dbuf[1];
  float* R = v_.dbuf[2];
  float* T = v_.dbuf[3];
  float* U = v_.dbuf[4];
  auto in_numel = [](const ResnetConvBn& u) {
    return static_cast<std::size_t>(u.conv.IC) * static_cast<std::size_t>(u.conv.H) *
           static_cast<std::size_t>(u.conv.W);
  };

  // Head. The loss is the mean over B images, hence dloss = 1/B per image.
  const int K = cfg_.num_classes;
  backend_.fill(v_.dlogits, 0.0f, nB * static_cast<std::size_t>(K));
  backend_.softmax_xent_backward(v_.dlogits, v_.probs, v_.labels, B, K, K, 1.0f / static_cast<float>(B));
  backend_.fill(v_.dfeats, 0.0f, nB * static_cast<std::size_t>(lay_.feat_C));
  backend_.matmul_backward(v_.dfeats, g + lay_.fc_w, g + lay_.fc_b, v_.dlogits, v_.feats, p + lay_.fc_w, B,
                           lay_.feat_C, K);
  ready(lay_.fc_w);
  const std::size_t n_feat =
      nB * static_cast<std::size_t>(lay_.feat_C) * static_cast<std::size_t>(lay_.feat_HW);
  backend_.fill(P, 0.0f, n_feat);
  backend_.global_avgpool_backward(P, v_.dfeats, B, lay_.feat_C, lay_.feat_HW);

  for (auto it = lay_.blocks.rbegin(); it != lay_.blocks.rend(); ++it) {
    ResnetBlockLayout& blk = *it;
    const std::size_t n_out = nB * blk.units.back().out_numel();
    const std::size_t n_in = nB * in_numel(blk.units.front());
    backend_.fill(Q, 0.0f, n_out);
    backend_.relu_backward(Q, blk.units.back().out, P, n_out);  // P is dead from here on
    const float* dbn_out = Q;
    for (std::size_t i = blk.units.size(); i-- > 0;) {
      ResnetConvBn& u = blk.units[i];
      float* dinp = i == 0 ? P : T;
      backend_.fill(dinp, 0.0f, nB * in_numel(u));
      convbn_backward(u, dinp, R, dbn_out, B);
      if (i > 0) {
        const ResnetConvBn& prev = blk.units[i - 1];
        const std::size_t n = nB * prev.out_numel();
        backend_.fill(U, 0.0f, n);
        backend_.relu_backward(U, prev.out, T, n);
        dbn_out = U;
      }
    }
    if (blk.has_down) {
      convbn_backward(blk.down, P, R, Q, B);
    } else {
      backend_.accumulate(P, Q, n_in);
    }
    ready(blk.first_param);
  }

  // Stem: P holds d(maxpool output) or d(stem output).
  ResnetConvBn& st = lay_.stem;
  const std::size_t n_stem = nB * st.out_numel();
  const float* dstem = P;
  if (lay_.maxpool) {
    Pool2dShape ps = lay_.pool;
    ps.B = B;
    backend_.fill(T, 0.0f, n_stem);
    backend_.maxpool2d_backward(T, P, v_.argmax, ps);
    dstem = T;
  }
  backend_.fill(U, 0.0f, n_stem);
  backend_.relu_backward(U, st.out, dstem, n_stem);
  convbn_backward(st, nullptr, R, U, B);  // the images need no gradient
  ready(0);
}

}  // namespace tt
