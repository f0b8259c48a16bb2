// The DDP gradient reducer (after PyTorch DDP's Reducer): the flat gradient buffer is cut into
// buckets — contiguous slices in reverse layer order, the first one small so communication starts
// early, later ones up to a cap — and each bucket's all-reduce is launched, strictly in order, on a
// communication thread as soon as backward has made all of its gradients final. finish_step() waits
// for the last bucket; gradients are then the mean over ranks. Hand-offs between the two threads carry
// the run clock's time (a bucket's ready time, the last bucket's end): Note [Virtual time] (run_clock.h).
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/model.h"
#include "core/profiler.h"
#include "engine/grad_reducer.h"
#include "engine/gradients/gradient_path.h"

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

  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void launch_ready(std::size_t from);  // enqueues buckets whose gradients are all final
  void comm_loop();

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
  std::thread comm_thread_;
};

}  // namespace tt
