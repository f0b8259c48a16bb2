// The seam between backward and gradient communication. Single-rank runs have no reducer;
// the DDP reducer (engine/gradients/ddp_reducer.*) averages gradients across ranks bucket by bucket.
#pragma once
#include <cstddef>
#include <string>

#include "core/model.h"

namespace tt {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  // Called once per optimizer step before the (last micro-step's) backward.
  virtual void begin_step(long step) = 0;
  // Backward reports: gradients [from, num_params) are final (called with decreasing `from`).
  virtual void on_grad_ready(std::size_t from) = 0;
  // Blocks until every bucket is averaged across ranks. Time spent here is exposed communication.
  virtual void finish_step() = 0;
  // The sum of squares of the averaged gradient, whose root the optimizer clips by, after finish_step
  // (Note [Gradient norm order], engine/gradients/ddp_reducer.h).
  virtual double grad_sum_squares() = 0;
  // A sharded run (--shard): after the optimizer's update, finish_update() sends this rank's updated
  // parameters to every rank and receives theirs.
  virtual bool shards() const { return false; }
  virtual void finish_update() {}
  // Zeroes the gradients for the next step where the reducer holds them in a way of its own (Note
  // [Released gradient pages], base/host_memory.h); false: Model::zero_grad() does.
  virtual bool zero_grads() { return false; }
  // ZeRO-3 (--shard params): the gate a training step's forward and backward report their units to
  // (Note [Parameter units], core/model.h; null: none), told each micro-step k of `step` before its
  // forward; gather_params() makes every parameter present again before anything reads them whole
  // (validation, a checkpoint, the replica check, the final digest; collective), release_params()
  // lets them go again (WholeParams: the two around a read).
  virtual UnitGate* unit_gate() { return nullptr; }
  virtual void begin_micro_step(long /*step*/, int /*micro*/) {}
  virtual void gather_params() {}
  virtual void release_params() {}
  // ZeRO-3: the SHA-256 of the parameters in order (params_sha256's value), each released bucket
  // gathered, hashed and released again in turn, so that no rank holds them all at once (a sharded
  // checkpoint's state.json; collective). Empty where parameters are whole (hash them directly).
  virtual std::string streamed_params_sha256() { return {}; }
};

// Every parameter present while it lives (ZeRO-3: GradReducer::gather_params, then release_params).
class WholeParams {
 public:
  explicit WholeParams(GradReducer* r) : r_(r) {
    if (r_ != nullptr) r_->gather_params();
  }
  ~WholeParams() {
    if (r_ != nullptr) r_->release_params();
  }
  WholeParams(const WholeParams&) = delete;
  WholeParams& operator=(const WholeParams&) = delete;

 private:
  GradReducer* r_;
};

}  // namespace tt
