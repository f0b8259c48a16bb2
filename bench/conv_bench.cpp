#include "bench/conv_bench.h"

#include <algorithm>
#include <cstddef>

#include "core/buffer.h"

namespace tt::bench {

namespace {

bool same_shape(const Conv2dShape& a, const Conv2dShape& b) {
  return a.B == b.B && a.IC == b.IC && a.H == b.H && a.W == b.W && a.OC == b.OC && a.KH == b.KH &&
         a.KW == b.KW && a.stride == b.stride && a.pad == b.pad;
}

std::size_t floats(std::size_t a, std::size_t b, std::size_t c, std::size_t d) {
  return a * b * c * d;
}

}  // namespace

std::vector<ConvLayer> distinct_convs(const std::vector<Conv2dShape>& calls) {
  std::vector<ConvLayer> layers;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    auto it = std::find_if(layers.begin(), layers.end(),
                           [&](const ConvLayer& l) { return same_shape(l.shape, calls[i]); });
    if (it == layers.end()) {
      layers.push_back({calls[i], 1, i == 0});
    } else {
      ++it->calls;
    }
  }
  return layers;
}

double conv_flops(const Conv2dShape& s) {
  return 2.0 * s.B * s.OH() * s.OW() * static_cast<double>(s.OC) * s.IC * s.KH * s.KW;
}

ConvTimes time_conv_layer(Backend& be, const ConvLayer& l, const OpSeconds& seconds) {
  const Conv2dShape& s = l.shape;
  const auto B = static_cast<std::size_t>(s.B);
  const std::size_t in_n = floats(B, s.IC, s.H, s.W), out_n = floats(B, s.OC, s.OH(), s.OW()),
                    w_n = floats(s.OC, s.IC, s.KH, s.KW);
  auto buffer = [&](std::size_t n) {
    DeviceBuffer b(be, std::max<std::size_t>(n, 1) * sizeof(float));
    be.fill(b.as<float>(), 0.01f, std::max<std::size_t>(n, 1));  // not uninitialised (NaNs, denormals)
    return b;
  };
  DeviceBuffer inp = buffer(in_n), weight = buffer(w_n), out = buffer(out_n), dinp = buffer(in_n),
               dweight = buffer(w_n), workspace = buffer(be.conv2d_workspace_floats(s));
  float* ws = workspace.as<float>();
  ConvTimes t;
  t.forward_s = seconds(
      [&] { be.conv2d_forward(out.as<float>(), inp.as<float>(), weight.as<float>(), nullptr, ws, s); });
  if (!l.input_layer) {
    t.dgrad_s = seconds([&] {
      be.conv2d_backward(dinp.as<float>(), nullptr, nullptr, out.as<float>(), inp.as<float>(),
                         weight.as<float>(), ws, s);
    });
  }
  t.wgrad_s = seconds([&] {
    be.conv2d_backward(nullptr, dweight.as<float>(), nullptr, out.as<float>(), inp.as<float>(),
                       weight.as<float>(), ws, s);
  });
  return t;
}

}  // namespace tt::bench
