// ZeRO-3 (--shard params): the DDP reducer as the model's unit gate, its parameters gathered unit by
// unit and released between uses (Note [ZeRO-3 units follow the buckets], ddp_reducer.h).
#include <algorithm>
#include <string>

#include "engine/gradients/ddp_reducer.h"
#include "tee/digest.h"

namespace tt {

// Which buckets each unit touches, and which buckets hold parameters outside every unit (pinned).
void DdpReducer::plan_units() {
  std::vector<std::size_t> covered(buckets_.size(), 0);  // floats of each bucket inside some unit
  for (const ParamUnit& u : unit_ranges_) {
    std::vector<std::size_t> touched;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const std::size_t lo = std::max(u.begin, buckets_[b].begin);
      const std::size_t hi = std::min(u.end, buckets_[b].end);
      if (lo >= hi) continue;
      touched.push_back(b);
      covered[b] += hi - lo;
    }
    units_.push_back(std::move(touched));
  }
  pinned_.assign(buckets_.size(), false);
  for (std::size_t b = 0; b < buckets_.size(); ++b) pinned_[b] = covered[b] < buckets_[b].size();
  held_.assign(buckets_.size(), Held::Present);  // the run starts from whole parameters
  gathered_at_.assign(buckets_.size(), RunClock::TimePoint{});
  for (std::size_t b = 0; b < buckets_.size(); ++b) count_gathered(b, true);
}

void DdpReducer::begin_micro_step(long step, int micro) {
  if (step != pass_step_) whole_gathers_ = 0;
  pass_step_ = step;
  micro_ = micro;
}

// The floats of bucket b outside this rank's chunk have come (present) or gone (training thread).
void DdpReducer::count_gathered(std::size_t b, bool present) {
  const std::size_t n = buckets_[b].size() - own_chunk(buckets_[b]).count;
  gathered_ = present ? gathered_ + n : gathered_ - n;
}

void DdpReducer::request(std::size_t unit, long step, int label_base) {
  std::lock_guard lock(mu_);
  const RunClock::TimePoint now = clock_.now();
  for (const std::size_t b : units_[unit]) {
    if (held_[b] != Held::Released) continue;
    held_[b] = Held::Pending;
    count_gathered(b, true);
    queue_.push_back(Launched{.bucket = b,
                              .ready = now,
                              .task = Task::Gather,
                              .step = step,
                              .label = label_base + static_cast<int>(b)});
  }
  cv_.notify_all();
}

void DdpReducer::await(std::size_t unit) {
  std::unique_lock lock(mu_);
  const auto present = [this, unit] {
    return std::all_of(units_[unit].begin(), units_[unit].end(),
                       [this](std::size_t b) { return held_[b] == Held::Present; });
  };
  cv_.wait(lock, [&] { return present() || error_ != nullptr; });
  if (error_ != nullptr) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  // The unit computes once its parameters exist (Note [Virtual time]).
  for (const std::size_t b : units_[unit]) clock_.advance_to(gathered_at_[b]);
  // What a unit computes beside, from the first update on (before it the run starts whole).
  if (released_once_) peak_gathered_ = std::max(peak_gathered_, gathered_);
}

// Discards bucket b outside this rank's chunk; the owner's bits come back with the next gather.
// On the communication thread: bucket b of the parameters from its owners.
void DdpReducer::run_gather(std::size_t b, long step, int label) {
  const RunClock::TimePoint t0 = clock_.now();
  gather_bucket(b, step, label);
  if (profiler_ != nullptr && profiler_->tracing()) {
    profiler_->record("gather bucket " + std::to_string(b), Lane::Comm, t0, clock_.now());
  }
}

// Its pages outside this rank's chunk were discarded and the gather writes every one of them: pooled
// pages moved there, or faulted in at once (Note [Pooled pages], base/host_memory.h).
void DdpReducer::gather_bucket(std::size_t b, long step, int label) {
  const Bucket& bk = buckets_[b];
  const comm::ElemRange own = own_chunk(bk);
  float* x = model_.param_data() + bk.begin;
  refill_params(x, own.offset);
  refill_params(x + own.offset + own.count, bk.size() - own.offset - own.count);
  path_.all_gather(x, bk.size(), step, label);
}

void DdpReducer::discard_params(float* x, std::size_t n) {
  if (opts_.pool == nullptr) return backend_.discard(x, n);
  opts_.pool->release(x, n * sizeof(float));
}

// Only where the gather overwrites x[0, n) whole may stale pooled pages land (Note [Pooled pages]).
void DdpReducer::refill_params(float* x, std::size_t n) {
  if (opts_.pool == nullptr) return backend_.prefault(x, n);
  opts_.pool->refill(x, n * sizeof(float), PagePool::Contents::Stale);
}

// Only a present bucket: one still travelling belongs to the next unit and stays.
void DdpReducer::release(std::size_t b) {
  {
    std::lock_guard lock(mu_);
    if (pinned_[b] || held_[b] != Held::Present) return;
    held_[b] = Held::Released;
  }
  count_gathered(b, false);
  const Bucket& bk = buckets_[b];
  const comm::ElemRange own = own_chunk(bk);
  float* x = model_.param_data() + bk.begin;
  discard_params(x, own.offset);
  discard_params(x + own.offset + own.count, bk.size() - own.offset - own.count);
}

void DdpReducer::before(std::size_t unit, UnitPass pass) {
  const int nb = static_cast<int>(buckets_.size());
  const int pass_index = pass == UnitPass::Forward ? 0 : 1;
  const int label_base = (3 + 2 * micro_ + pass_index) * nb + 1;
  request(unit, pass_step_, label_base);
  // The next unit in this pass's order, queued behind this one's: it travels while this one computes.
  const bool forward = pass == UnitPass::Forward;
  const bool has_next = forward ? unit + 1 < units_.size() : unit > 0;
  if (opts_.prefetch && has_next) request(forward ? unit + 1 : unit - 1, pass_step_, label_base);
  await(unit);
}

void DdpReducer::after(std::size_t unit, UnitPass pass) {
  const bool forward = pass == UnitPass::Forward;
  // The last unit's forward is followed at once by its backward: it stays.
  if (forward && unit + 1 == units_.size()) return;
  const bool has_next = forward ? unit + 1 < units_.size() : unit > 0;
  const std::vector<std::size_t>* next = has_next ? &units_[forward ? unit + 1 : unit - 1] : nullptr;
  for (const std::size_t b : units_[unit]) {
    if (next != nullptr && std::find(next->begin(), next->end(), b) != next->end()) continue;
    release(b);
  }
}

void DdpReducer::release_params() {
  if (units_.empty()) return;
  for (std::size_t b = 0; b < buckets_.size(); ++b) release(b);
}

// Whatever is released comes back, on this thread (nothing is queued between steps). The n-th such
// gather after a step is labelled kWholeLabel + n nb + b, apart from the step's own gathers.
void DdpReducer::gather_params() {
  if (units_.empty()) return;
  backend_.publish();
  const int base = kWholeLabel + whole_gathers_++ * static_cast<int>(buckets_.size());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (held_[b] != Held::Released) continue;
    gather_bucket(b, pass_step_, base + static_cast<int>(b));
    held_[b] = Held::Present;
    count_gathered(b, true);
  }
}

// Labelled as gather_params' gathers are (the same counter), one bucket present at a time.
std::string DdpReducer::streamed_params_sha256() {
  if (units_.empty()) return {};
  backend_.publish();
  const int base = kWholeLabel + whole_gathers_++ * static_cast<int>(buckets_.size());
  // The digest is of the flat buffer in order; the buckets follow backward's order (from the end).
  std::vector<std::size_t> order(buckets_.size());
  for (std::size_t b = 0; b < order.size(); ++b) order[b] = b;
  std::sort(order.begin(), order.end(),
            [this](std::size_t a, std::size_t b) { return buckets_[a].begin < buckets_[b].begin; });
  tee::Sha256 h;
  std::vector<float> host;  // [bucket size]: one bucket at a time
  for (const std::size_t b : order) {
    const Bucket& bk = buckets_[b];
    float* x = model_.param_data() + bk.begin;
    const bool released = held_[b] == Held::Released;
    if (released) gather_bucket(b, pass_step_, base + static_cast<int>(b));
    host.resize(bk.size());
    backend_.copy_to_host(host.data(), x, host.size() * sizeof(float));
    h.update(tee::bytes_of(std::span<const float>(host)));
    if (!released) continue;
    const comm::ElemRange own = own_chunk(bk);
    discard_params(x, own.offset);
    discard_params(x + own.offset + own.count, bk.size() - own.offset - own.count);
  }
  return tee::to_hex(h.finish());
}

}  // namespace tt
