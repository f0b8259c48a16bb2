// The DDP gradient reducer (after PyTorch DDP's Reducer): the flat gradient buffer is cut into
// buckets — contiguous slices in reverse layer order, the first one small so communication starts
// early, later ones up to a cap — and each bucket's all-reduce is launched, strictly in order, on a
// communication thread as soon as backward has made all of its gradients final. finish_step() waits
// for the last bucket; gradients are then the mean over ranks. Hand-offs between the two threads carry
// the run clock's time (a bucket's ready time, the last bucket's end): Note [Virtual time] (run_clock.h).
//
// Sharded (--shard, Note [Shard layout] in shard.h): each bucket is reduce-scattered instead, on the same
// thread at the same moments, and only this rank's shard of it is averaged; finish_update() all-gathers
// the parameters the optimizer updated, bucket by bucket. Where the gradients are host memory (the CPU,
// real values), the bucket's pages outside the shard are released right after its reduce-scatter, while
// backward goes on (Note [Released gradient pages], base/host_memory.h), and zero_grads() zeroes the next
// step's gradients without touching them again. With --grad-accum K the reduce-scatters run in the last
// micro-step's backward only, so the whole buffer stays resident until then: releasing after every
// micro-step would need every micro-step reduced (K times the messages) to keep the sums.
//
// Note [ZeRO-3 units follow the buckets]: --shard params keeps ZeRO-2's per-bucket reduce-scatter and
// shard layout unchanged, so every gradient element is summed by the same hops as DDP's, and makes the
// parameters' presence follow the same buckets. The reducer is the model's unit gate (Note [Parameter
// units], core/model.h): a unit needs every bucket its parameters touch. Before a unit's forward (and
// again before its backward) the buckets of it that are released are all-gathered — the ring's
// all-gather, the same hop runner, sealed channel and stream positions as the all-reduce — on the
// communication thread, and the next unit's (forward: the one after, backward: the one before) are
// queued behind them, so that they travel while this unit computes (--prefetch on). After the unit,
// the buckets it touches that the next unit does not are released: the backend discards their floats
// outside this rank's chunk (on the CPU their whole pages go back to the system, and come back at once
// before the bucket's next gather writes them: Note [Pages faulted in at once]). Buckets that hold
// anything outside every unit (embeddings, final norm, head: used at both ends of a step) are pinned,
// gathered after the update as ZeRO-1/2 gather all. Each gather copies the owners' bits, so every unit
// computes with DDP's parameters and the run ends with DDP's bits. Every gather message is bound to its
// step and a label of its own: bucket b at micro-step k and pass (forward 0, backward 1) is label
// (3 + 2k + pass) nb + 1 + b, after the parameters' 0..nb-1, the norm's nb and a checkpoint's optimizer
// gather nb + 1 .. 3 nb (training_run.cpp); gathering the whole model to read it between steps
// (GradReducer::gather_params) takes labels from 2^30 up. So a message replayed from another unit, pass
// or step fails to open.
//
// Note [Gradient norm order]: the clipping norm sums squares over the whole gradient, the one sum that
// spans shards. So that a sharded run clips exactly as DDP does, both take it in one order where
// sharding runs on real values (the CPU's or a CUDA GPU's): the sum of squares of each bucket's ring chunk
// c (backend sum_squares, in double), added up bucket by bucket in launch order, chunks 0..P-1 within each.
// DDP computes every chunk's part itself; a sharded rank computes its own chunk's and the ring all-gathers
// the parts (their double bytes, moved and never added in transit; on a GPU through a device copy, the
// buffers the device ring moves). Elsewhere (ordered_norm false) DDP's norm
// is one sum_squares over the buffer, as before; a sharded run on an emulated GPU, whose values are
// placeholders, still all-gathers its parts, so that their messages are sealed and costed as a real sharded
// run's.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "base/host_memory.h"
#include "comm/allreduce/ring_geometry.h"
#include "core/backend.h"
#include "core/buffer.h"
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
  bool prefetch = true;                 // Params: queue the next unit's gather behind this one's
  // Gradients or Params on host memory: the gradient buffer, whose pages outside this rank's shard each
  // bucket releases after its reduce-scatter (Note [Released gradient pages], base/host_memory.h); null:
  // the buffer stays whole.
  const ReleasableHostBuffer* release = nullptr;
  // ZeRO-3 on host memory: where the pages released (gradients and parameters) wait for the next range
  // about to be written (Note [Pooled pages], base/host_memory.h); null: they go back to the system.
  PagePool* pool = nullptr;
  bool measure_resident = false;  // host gradients: measure their resident bytes (peak_grad_resident_bytes)
  // The gradients and parameters are device memory the host cannot read (a CUDA GPU's): the path's halves
  // move device buffers, so the norm's parts travel through a device copy (Note [Gradient norm order]).
  bool device_memory = false;
};

class DdpReducer final : public GradReducer, public UnitGate {
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
  // ZeRO-3 (Note [ZeRO-3 units follow the buckets]).
  UnitGate* unit_gate() override { return units_.empty() ? nullptr : this; }
  void begin_micro_step(long step, int micro) override;
  void gather_params() override;
  void release_params() override;
  std::string streamed_params_sha256() override;
  void before(std::size_t unit, UnitPass pass) override;
  void after(std::size_t unit, UnitPass pass) override;
  // The most parameter floats outside this rank's shard present while a unit computed, from the second
  // step on (ZeRO-3; else 0).
  std::size_t peak_gathered_floats() const { return peak_gathered_; }
  bool zero_grads() override;
  // The most bytes of the gradient buffer resident at once in a step, measured (mincore) before each
  // bucket's release and after the last bucket (0 where not measured: options' measure_resident).
  std::size_t peak_grad_resident_bytes() const { return peak_grad_resident_; }

  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void launch_ready(std::size_t from);  // enqueues buckets whose gradients are all final
  void comm_loop();
  bool sharded() const { return opts_.shard != ShardStage::None; }
  comm::ElemRange chunk(const Bucket& b, int c) const;
  comm::ElemRange own_chunk(const Bucket& b) const { return chunk(b, (opts_.rank + 1) % opts_.world); }
  // ZeRO-3's bookkeeping (param_units.cpp). Under mu_ where the communication thread reads it too.
  void plan_units();
  void request(std::size_t unit, long step, int label_base);  // queues the unit's released buckets
  void await(std::size_t unit);                               // until they are present; rethrows
  void release(std::size_t bucket);
  void count_gathered(std::size_t bucket, bool present);
  void run_reduce(std::size_t b, long step);
  void run_gather(std::size_t b, long step, int label);
  void gather_bucket(std::size_t b, long step, int label);  // bucket b's parameters from their owners
  void prefault_next_grads(std::size_t from);               // Note [Pages faulted in at once]
  void measure_grads();                                     // peak_grad_resident_ (either thread)
  // Zeroes bucket b outside this rank's chunk, its pages released (into `pool` where not null).
  void release_grads(std::size_t b, PagePool* pool);
  void discard_params(float* x, std::size_t n);  // Note [Pooled pages]: ZeRO-3's released parameters
  void refill_params(float* x, std::size_t n);   // and those a gather is about to write
  void gather_norm_parts();                      // every rank's parts into norm_parts_ (sharded)

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
  enum class Task { Reduce, Gather };
  struct Launched {
    std::size_t bucket;         // index into buckets_
    RunClock::TimePoint ready;  // when backward made it final, or the gather was asked for
    Task task = Task::Reduce;
    long step = 0;  // a gather's message labels
    int label = 0;
  };
  std::deque<Launched> queue_;       // in launch order
  std::size_t completed_ = 0;        // buckets finished this step
  RunClock::TimePoint last_done_{};  // when the communication thread finished its latest bucket
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<ParamUnit> unit_ranges_;  // the model's units (Note [Parameter units], core/model.h)
  // ZeRO-3: the units' buckets (Note [ZeRO-3 units follow the buckets]), each bucket's parameters.
  enum class Held { Present, Pending, Released };
  std::vector<std::vector<std::size_t>> units_;   // per unit in forward order: the buckets it touches
  std::vector<bool> pinned_;                      // per bucket: holds parameters outside every unit
  std::vector<Held> held_;                        // per bucket (mu_)
  std::vector<RunClock::TimePoint> gathered_at_;  // per bucket: when its latest gather ended (mu_)
  long pass_step_ = 0;
  int micro_ = 0;
  static constexpr int kWholeLabel = 1 << 30;  // gather_params' labels (param_units.cpp)
  int whole_gathers_ = 0;                      // since the step began
  std::size_t gathered_ = 0;                   // floats outside the shard present now (training thread)
  std::size_t peak_gathered_ = 0;              // and at most while a unit computed
  bool released_once_ = false;  // an update has released the parameters (the first step starts whole)
  static constexpr std::size_t kReleaseAhead = 2;  // buckets launched and not yet released (launch_ready)
  std::atomic<std::size_t> peak_grad_resident_ = 0;
  std::vector<double> norm_parts_;  // (P chunks, buckets) sums of squares, chunk-major (training thread)
  DeviceBuffer norm_device_;        // (P chunks, buckets) doubles: norm_parts_ on device (device_memory)
  std::thread comm_thread_;
};

}  // namespace tt
