// The DDP gradient reducer (after PyTorch DDP's Reducer): the flat gradient buffer is cut into
// buckets — contiguous slices in reverse layer order, the first one small so communication starts
// early, later ones up to a cap — and each bucket's all-reduce is launched, strictly in order, on a
// communication thread as soon as backward has made all of its gradients final. finish_step() waits
// for the last bucket; gradients are then the mean over ranks. Hand-offs between the two threads carry
// the run clock's time (a bucket's ready time, the last bucket's end): Note [Virtual time] (run_clock.h).
//
// Sharded (--shard, Note [Shard layout] in shard.h): each bucket is reduce-scattered instead, on the same
// thread at the same moments, and only this rank's shard of it is averaged; finish_update() all-gathers
// the parameters the optimizer updated, bucket by bucket.
//
// Note [Gradient norm order]: the clipping norm sums squares over the whole gradient, the one sum that
// spans shards. So that a sharded run clips exactly as DDP does, both take it in one order where
// sharding runs on real values (host gradients, real compute): the sum of squares of each bucket's ring chunk
// c (backend sum_squares, in double), added up bucket by bucket in launch order, chunks 0..P-1 within each.
// DDP computes every chunk's part itself; a sharded rank computes its own chunk's and the ring all-gathers
// the parts (their double bytes, moved and never added in transit). Elsewhere (ordered_norm false) DDP's norm
// is one sum_squares over the buffer, as before; a sharded run on an emulated GPU, whose values are
// placeholders, still all-gathers its parts, so that their messages are sealed and costed as a real sharded
// run's.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/allreduce/ring_geometry.h"
#include "core/backend.h"
#include "core/model.h"
#include "core/profiler.h"
#include "engine/grad_reducer.h"
#include "engine/gradients/gradient_path.h"
#include "engine/run_choices.h"

namespace tt {

struct Bucket {
  std::size_t begin = 0;  // floats into the gradient buffer
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

// Plans buckets over the parameter table: walking parameters from the last to the first, a bucket
// closes once it holds at least its cap (first bucket: first_cap_bytes, later: cap_bytes). A
// parameter is never split across buckets. cap_bytes == 0 means one bucket for the whole model.
// Buckets are returned in launch order (highest offsets first).
std::vector<Bucket> plan_buckets(const std::vector<ParamInfo>& params, std::size_t num_params,
                                 std::size_t first_cap_bytes, std::size_t cap_bytes);

struct DdpOptions {
  bool overlap = true;  // launch buckets during backward (false: all after backward)
  int world = 1;
  int rank = 0;
  ShardStage shard = ShardStage::None;  // anything but None: reduce-scatter, and finish_update gathers
  bool ordered_norm = false;            // Note [Gradient norm order] (implied by a shard)
};

class DdpReducer final : public GradReducer {
 public:
  // `path` sums each bucket (on the communication thread); it must outlive the reducer.
  DdpReducer(Backend& backend, Model& model, std::vector<Bucket> buckets, GradientPath& path, DdpOptions opts,
             Profiler* profiler);
  ~DdpReducer() override;
  DdpReducer(const DdpReducer&) = delete;
  DdpReducer& operator=(const DdpReducer&) = delete;

  void begin_step(long step) override;
  void on_grad_ready(std::size_t from) override;
  void finish_step() override;
  double grad_sum_squares() override;
  bool shards() const override { return sharded(); }
  void finish_update() override;
  // Sharded: all-gathers every bucket's shards of x (a buffer laid out as the parameters), labelling
  // bucket b's messages `first_label + b` at `step` (collective).
  void all_gather_shards(float* x, long step, int first_label);

  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void launch_ready(std::size_t from);  // enqueues buckets whose gradients are all final
  void comm_loop();
  bool sharded() const { return opts_.shard != ShardStage::None; }
  comm::ElemRange chunk(const Bucket& b, int c) const;

  Backend& backend_;
  Model& model_;
  std::vector<Bucket> buckets_;
  GradientPath& path_;
  DdpOptions opts_;
  Profiler* profiler_;
  WallClock wall_;   // the clock when there is no profiler
  RunClock& clock_;  // the profiler's

  long step_ = 0;
  std::size_t next_to_launch_ = 0;  // index into buckets_ (main thread only)

  std::mutex mu_;
  std::condition_variable cv_;
  struct Launched {
    std::size_t bucket;         // index into buckets_
    RunClock::TimePoint ready;  // when backward made it final (the training thread's time)
  };
  std::deque<Launched> queue_;       // in launch order
  std::size_t completed_ = 0;        // buckets finished this step
  RunClock::TimePoint last_done_{};  // when the communication thread finished its latest bucket
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<double> norm_parts_;  // (P chunks, buckets) sums of squares, chunk-major (training thread)
  std::thread comm_thread_;
};

}  // namespace tt
