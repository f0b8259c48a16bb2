#include "engine/dist_context.h"

#include <cstring>

#include "base/error.h"
#include "engine/param_chunks.h"
#include "tee/bytes.h"
#include "tee/digest.h"

namespace tt {

DistContext::DistContext(comm::Transport& transport, comm::Channel& channel, Profiler* profiler)
    : transport_(transport), coll_(transport, channel, profiler) {}

std::vector<std::byte> DistContext::allgather_bytes(std::span<const std::byte> mine) {
  return coll_.allgather(mine, ++seq_);
}

void DistContext::agree_config(const std::string& config_text) {
  const tee::Sha256Digest d = tee::sha256(config_text);
  const std::vector<std::byte> all = allgather_bytes(std::as_bytes(std::span(d)));
  std::string differ;
  for (int r = 1; r < world(); ++r) {
    if (std::memcmp(all.data() + static_cast<std::size_t>(r) * d.size(), all.data(), d.size()) != 0) {
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  if (!differ.empty()) {
    throw InputError("rank(s) " + differ +
                     " were launched with a configuration that differs from rank 0's; " +
                     "start every rank with the same flags and files (config digest of this rank: " +
                     tee::to_hex(std::span(d)).substr(0, 16) + ")");
  }
}

void DistContext::broadcast_params(Backend& backend, Model& model) {
  // One broadcast per chunk: every rank has the same parameter count (agree_config), so the chunks and
  // their sequence numbers match across ranks.
  for_param_chunks(backend, model, true, [&](std::span<float> c) { coll_.broadcast(c, 0, ++seq_); });
}

double DistContext::mean(double x) {
  if (world() == 1) return x;
  const std::vector<std::byte> all = allgather_bytes(std::as_bytes(std::span(&x, 1)));
  double sum = 0;
  for (int r = 0; r < world(); ++r) {
    double v = 0;
    std::memcpy(&v, all.data() + static_cast<std::size_t>(r) * sizeof(double), sizeof(double));
    sum += v;
  }
  return sum / world();
}

void DistContext::check_replicas(Backend& backend, Model& model, long step) {
  tee::Sha256 h;
  for_param_chunks(backend, model, false,
                   [&](std::span<float> c) { h.update(tee::bytes_of(std::span<const float>(c))); });
  const tee::Sha256Digest d = h.finish();
  const std::vector<std::byte> all = allgather_bytes(std::as_bytes(std::span(d)));
  const int bad = comm::first_mismatch(all, d.size());
  if (bad >= 0) {
    throw RunError("replica check at step " + std::to_string(step) + ": rank " + std::to_string(bad) +
                   "'s parameters differ from rank 0's (the replicas diverged)");
  }
}

std::vector<int64_t> DistContext::gather(int64_t v) {
  const std::vector<std::byte> all = allgather_bytes(std::as_bytes(std::span(&v, 1)));
  std::vector<int64_t> out(static_cast<std::size_t>(world()));
  std::memcpy(out.data(), all.data(), all.size());
  return out;
}

std::pair<std::vector<double>, std::vector<double>> DistContext::max_and_mean(const std::vector<double>& v) {
  const std::vector<std::byte> all = allgather_bytes(std::as_bytes(std::span(v)));
  std::vector<double> mx(v.size(), 0.0), mean(v.size(), 0.0);
  for (int r = 0; r < world(); ++r) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      double x = 0;
      std::memcpy(&x, all.data() + (static_cast<std::size_t>(r) * v.size() + i) * sizeof(double),
                  sizeof(double));
      mx[i] = r == 0 ? x : std::max(mx[i], x);
      mean[i] += x / world();
    }
  }
  return {mx, mean};
}

}  // namespace tt
