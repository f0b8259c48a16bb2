#include "engine/run/dist_context.h"

#include <algorithm>
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

std::vector<std::vector<std::byte>> DistContext::allgather_blobs(std::span<const std::byte> mine,
                                                                 std::size_t max_bytes) {
  const std::vector<int64_t> sizes = gather(static_cast<int64_t>(mine.size()));
  std::size_t widest = 0;
  for (int r = 0; r < world(); ++r) {
    const int64_t n = sizes[static_cast<std::size_t>(r)];
    if (n < 0 || static_cast<uint64_t>(n) > max_bytes)
      throw IntegrityError("rank " + std::to_string(r) + " sent " + std::to_string(n) +
                           " bytes where at most " + std::to_string(max_bytes) + " are allowed");
    widest = std::max(widest, static_cast<std::size_t>(n));
  }
  std::vector<std::byte> padded(widest);  // (widest,): mine, then zeros
  std::copy(mine.begin(), mine.end(), padded.begin());
  const std::vector<std::byte> all = allgather_bytes(padded);
  std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(world()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    const auto from = all.begin() + static_cast<std::ptrdiff_t>(r * widest);
    out[r].assign(from, from + static_cast<std::ptrdiff_t>(sizes[r]));
  }
  return out;
}

void DistContext::broadcast_params(Backend& backend, Model& model) {
  // One broadcast per chunk: every rank has the same parameter count (the configuration agreement of
  // input_agreement.h), so the chunks and their sequence numbers match across ranks.
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
