#include "tools/cli/bench_common.h"

#include <algorithm>
#include <chrono>

#include "core/backend_factory.h"
#include "engine/run/run_plan.h"
#include "engine/run/train_options.h"

namespace tt::cli {

std::unique_ptr<Backend> bench_backend(DeviceKind device, int threads, bool tf32) {
  TrainOptions as_train;  // train's checks of the same choices
  as_train.compute.device = device;
  as_train.compute.tf32 = tf32;
  validate(as_train);
  BackendOptions bo = backend_options(device, threads);
  bo.tf32 = tf32;
  return make_backend(bo);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median_op_seconds(Backend& be, int reps, const std::function<void()>& op,
                         const std::function<void()>& before_each) {
  op();
  be.synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    if (before_each) before_each();
    const auto t0 = std::chrono::steady_clock::now();
    op();
    be.synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median_of(std::move(t));
}

Batch placeholder_batch(const nlohmann::json& mc, bool image, int batch, int seq) {
  Batch b;
  b.B = batch;
  const auto n = static_cast<std::size_t>(batch);
  if (image) {
    const auto side = mc["image_size"].get<std::size_t>();
    b.images.assign(n * mc["image_channels"].get<std::size_t>() * side * side, 0.0f);
    b.targets.assign(n, 0);
  } else {
    b.T = seq;
    b.tokens.assign(n * static_cast<std::size_t>(seq), 0);
    b.targets = b.tokens;
  }
  return b;
}

}  // namespace tt::cli
