// What the CLI's benchmarks share (bench step, host-profile, emulated-step, conv): the backend a
// benchmark runs on, chosen and checked as `train` does; the median of a synchronised op's times;
// a placeholder batch of a model's input shape for costing a step on the emulated GPU.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/backend.h"
#include "core/model.h"

namespace tt::cli {

// The backend for --device, --threads and --tf32, refused as `train` refuses them (--tf32 needs
// --device cuda; a cuda device needs a GPU).
std::unique_ptr<Backend> bench_backend(DeviceKind device, int threads, bool tf32);

// The middle value of v (its upper median for an even count).
double median_of(std::vector<double> v);

// Median seconds of one call of `op` on `be` over `reps` timed calls, each synchronised, after one
// untimed call (plans, workspaces, first touch); `before_each` runs before every timed call, outside
// the time (the host profile's barrier between ranks).
double median_op_seconds(Backend& be, int reps, const std::function<void()>& op,
                         const std::function<void()>& before_each = {});

// A batch of zeros in the model's input shape (`mc`: model_config_json): images (B, C, H, W) and
// labels for an image model, tokens and targets (B, seq) for a language model. Its values never
// matter where it is used: on the emulated GPU, whose ops cost their shapes.
Batch placeholder_batch(const nlohmann::json& mc, bool image, int batch, int seq);

}  // namespace tt::cli
