// SmShare: the time an emulated GPU's AES-GCM kernels hold its SMs, which its compute kernels then wait
// for (Note [GPU crypto shares the SMs]).
#pragma once
#include <mutex>
#include <utility>
#include <vector>

#include "core/run_clock.h"

namespace tt {

// Note [GPU crypto shares the SMs]: fast's seal and open kernels (tee/cuda) are bound by the SMs'
// integer throughput, not by memory: at its measured 148.8 GB/s the AES-GCM kernel keeps every SM of an
// H200 busy (emulated_gpu.h), so it cannot run beside backward's kernels for free. The emulated GPU
// serialises them: while an AES-GCM kernel runs it holds all SMs and no compute kernel runs. The
// communication thread charges each kernel on its own time (the ring waits for its seal) and lends the
// SMs for that interval (lend). Once a step's gradients are averaged — the reducer's wait, after which
// no kernel of the step is still to be lent, so the result does not depend on which thread ran first —
// the compute thread settles: the part of the lent intervals before its own time (the end of backward)
// delayed backward by as much, and its time moves on by that overlap. Kernels that run after backward
// has ended take nothing from it. Not modelled: the later buckets that backward's delay makes ready later
// (a second-order shift of the ring), and a kernel sharing the SMs with compute instead of holding all of
// them. The compute thread's own sealing (a sharded run's all-gathers) is on its own time already and is
// never lent. Checked on an H200 (2026-11-30, bench_gpu_aead's "beside a GEMM"): 40 FP32 GEMMs and 40
// seals of 64 x 1 MiB launched together on two streams took 32.73 ms against 34.32 ms serialised (they
// overlap by 0.10 of the shorter), so holding all SMs overestimates the pair by 4.9%.
class SmShare {
 public:
  using TimePoint = RunClock::TimePoint;
  // AES-GCM kernels held the SMs over [begin, end) (the communication thread's time).
  void lend(TimePoint begin, TimePoint end);
  // Seconds of the lent intervals before `compute_now`: what the compute stream waited for. Forgets
  // every interval lent so far.
  double settle(TimePoint compute_now);

 private:
  std::mutex mu_;
  std::vector<std::pair<TimePoint, TimePoint>> lent_;
};

}  // namespace tt
