// Per-layer convolution times of a backend (`teetrain bench conv`): each distinct convolution a model's
// step calls, timed in its three passes — forward, input gradient (dgrad) and weight gradient (wgrad) —
// as the backend runs them (CPU, cuDNN), or as the emulated GPU charges them. A step's time says how
// far the emulator is off for a model; these say for which layers (docs/reproducing.md, "Validating the
// emulator": the GPU fixtures hold whole steps only).
#pragma once
#include <functional>
#include <vector>

#include "core/backend.h"

namespace tt::bench {

// One distinct convolution of a step: its shape, how many times a step calls it, and whether the first
// call is the model's first layer (whose input gradient nobody needs: the step skips its dgrad).
struct ConvLayer {
  Conv2dShape shape;
  int calls = 0;
  bool input_layer = false;
};

// The distinct shapes of `calls` (a model's forward, in order: EmulatedBackend::log_convs), in order
// of first call; calls[0] is the input layer.
std::vector<ConvLayer> distinct_convs(const std::vector<Conv2dShape>& calls);

// FLOPs of one pass of a convolution: 2 * (B * OH * OW) * OC * (IC * KH * KW); dgrad and wgrad do as
// many as forward.
double conv_flops(const Conv2dShape& s);

struct ConvTimes {
  double forward_s = 0;
  double dgrad_s = 0;  // 0 for the input layer
  double wgrad_s = 0;
};

// Seconds one call of `op` takes on the backend: measured (synchronised, a median) or accounted.
using OpSeconds = std::function<double(const std::function<void()>& op)>;

// Times the three passes of layer `l` on `be` (its buffers are the backend's, filled with a small
// constant; the bias gradient is left out, as it is no convolution).
ConvTimes time_conv_layer(Backend& be, const ConvLayer& l, const OpSeconds& seconds);

}  // namespace tt::bench
