// Cross-rank consistency and bookkeeping for a data-parallel run, over our own collectives (so in
// TEE mode they travel through the sealed channel like the gradients do): the exchange behind the
// agreement on configuration and inputs (input_agreement.h), the initial parameter broadcast, loss
// averaging, replica checks and gathering counters.
// Threading: call from the main thread only while the DDP reducer's comm thread is idle
// (between finish_step() and the next backward), per comm/README.md.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/collectives.h"
#include "comm/transport.h"
#include "core/backend.h"
#include "core/model.h"
#include "core/profiler.h"

namespace tt {

class DistContext {
 public:
  DistContext(comm::Transport& transport, comm::Channel& channel, Profiler* profiler);

  int rank() const { return transport_.rank(); }
  int world() const { return transport_.size(); }

  // Every rank's `mine`, in rank order; sizes may differ between ranks, up to `max_bytes` each (a
  // larger one is refused on every rank: IntegrityError naming the rank). Two allgathers: the sizes,
  // then the blobs padded to the largest. What the input agreement (input_agreement.h) exchanges.
  std::vector<std::vector<std::byte>> allgather_blobs(std::span<const std::byte> mine, std::size_t max_bytes);
  // Rank 0's parameters become every rank's.
  void broadcast_params(Backend& backend, Model& model);
  // Mean of a scalar over ranks, summed in rank order (identical on every rank).
  double mean(double x);
  // Compares the SHA-256 of the parameters across ranks; throws RunError naming the first rank
  // whose replica differs from rank 0's.
  void check_replicas(Backend& backend, Model& model, long step);
  // Each rank's value of v, in rank order.
  std::vector<int64_t> gather(int64_t v);
  // Elementwise max and mean over ranks of a vector of doubles (phase times), in rank order.
  std::pair<std::vector<double>, std::vector<double>> max_and_mean(const std::vector<double>& v);

 private:
  std::vector<std::byte> allgather_bytes(std::span<const std::byte> mine);

  comm::Transport& transport_;
  comm::Collectives coll_;
  uint64_t seq_ = 0;  // sequence number of each collective: part of its sealed context
};

}  // namespace tt
