// GradientPath: the one way the engine sums a gradient bucket across ranks. The DDP reducer calls it
// for every bucket (on its communication thread); `bench allreduce` times it; each way of summing —
// our algorithms on host buffers, the ring on device buffers, MPI_Allreduce, ncclAllReduce — is one
// implementation, chosen from the table in gradient_paths.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/error.h"
#include "comm/channel.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/gradients/segments.h"

namespace tt {

// The context a path's messages for bucket `bucket` of `step` start from (the algorithm fills in the rest).
inline comm::MessageContext bucket_message_id(long step, int bucket) {
  comm::MessageContext id;
  id.step = static_cast<std::uint64_t>(step);
  id.bucket = static_cast<std::uint32_t>(bucket);
  return id;
}

class GradientPath {
 public:
  GradientPath() = default;
  virtual ~GradientPath() = default;
  GradientPath(const GradientPath&) = delete;
  GradientPath& operator=(const GradientPath&) = delete;

  // In-place sum of g[0, n) over every rank; `step` and `bucket` label the messages. On a GPU
  // platform the bucket's gradients may still be in flight on the backend's stream: a path on device
  // buffers waits for them first.
  virtual void sum(float* g, std::size_t n, long step, int bucket) = 0;
  // The run banner's `gradients` line, the summary's `gradient_path`.
  virtual std::string describe() const = 0;
  // The segments as cut (bytes 0: whole chunks) and why, or nullopt where the path cuts none of ours
  // (MPI, NCCL).
  virtual std::optional<SegmentPick> segment() const { return std::nullopt; }
  // Our host algorithms' per-bucket choice (null on other paths).
  virtual AlgoSelection* selection() { return nullptr; }

  // Sharded data parallelism (--shard; Note [Shard layout], shard.h): the two halves of sum(). The
  // reduce-scatter leaves this rank the finished sum of its shard of g[0, n) only; the all-gather
  // sends this rank's shard of x[0, n) to every rank and fills in theirs. A path that cannot (shards()
  // false) is refused by its row of the table before it is built.
  virtual bool shards() const { return false; }
  virtual void reduce_scatter(float* /*g*/, std::size_t /*n*/, long /*step*/, int /*bucket*/) {
    throw RunError(describe() + " cannot reduce-scatter");
  }
  virtual void all_gather(float* /*x*/, std::size_t /*n*/, long /*step*/, int /*bucket*/) {
    throw RunError(describe() + " cannot all-gather");
  }
};

}  // namespace tt
