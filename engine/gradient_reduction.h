// How a training run sums a step's gradient buckets across ranks (engine/run_plan.h decides): the
// path the plan asks for, selected once from the table of gradient paths (engine/gradient_paths.h),
// as the reducer's AllreduceFn, with a one-line description of it (the run banner's `gradients` line,
// the summary's `gradient_path`).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/ddp_reducer.h"
#include "engine/gradient_paths.h"

namespace tt {

class GradientReduction {
 public:
  // Every reference in `s` must outlive this object. Throws InputError when the plan's path cannot run
  // (e.g. it needs MPI and `s.mpi` is null: in-process ranks).
  explicit GradientReduction(const GradientSetup& s);
  GradientReduction(const GradientReduction&) = delete;
  GradientReduction& operator=(const GradientReduction&) = delete;

  const AllreduceFn& fn() const { return fn_; }
  std::string path() const { return path_->describe(); }
  // --cc-transfer-us as applied to the ring (0 when the ring is not sealed on the host).
  double cc_transfer_us() const { return platform_.cc_transfer_us(); }
  std::optional<SegmentPick> segment() const { return path_->segment(); }
  // Our host algorithms: what each bucket took and why (AlgoSelection::summary); null on other paths.
  nlohmann::json selection() const {
    const AlgoSelection* s = path_->selection();
    return s != nullptr ? s->summary() : nlohmann::json(nullptr);
  }

 private:
  platform::Platform& platform_;
  std::unique_ptr<GradientPath> path_;
  AllreduceFn fn_;
};

}  // namespace tt
