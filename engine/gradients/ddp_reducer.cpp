#include "engine/gradients/ddp_reducer.h"

#include <algorithm>

#include "core/emulated/emulated_backend.h"

namespace tt {

std::vector<Bucket> plan_buckets(const std::vector<ParamInfo>& params, std::size_t num_params,
                                 std::size_t first_cap_bytes, std::size_t cap_bytes) {
  std::vector<Bucket> out;
  if (num_params == 0) return out;
  if (cap_bytes == 0) return {Bucket{0, num_params}};
  // Parameters sorted by offset descending: backward finishes them in this order.
  std::vector<const ParamInfo*> order;
  for (const ParamInfo& p : params) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const ParamInfo* a, const ParamInfo* b) { return a->offset > b->offset; });
  std::size_t end = num_params;
  std::size_t cap = first_cap_bytes / sizeof(float);
  for (const ParamInfo* p : order) {
    if (end - p->offset >= cap) {
      out.push_back(Bucket{p->offset, end});
      end = p->offset;
      cap = cap_bytes / sizeof(float);
    }
  }
  if (end > 0) out.push_back(Bucket{0, end});
  return out;
}

DdpReducer::DdpReducer(Backend& backend, Model& model, std::vector<Bucket> buckets, GradientPath& path,
                       DdpOptions opts, Profiler* profiler)
    : backend_(backend),
      model_(model),
      buckets_(std::move(buckets)),
      path_(path),
      opts_(opts),
      profiler_(profiler),
      clock_(profiler != nullptr ? profiler->clock() : wall_),
      unit_ranges_(model.param_units()),
      comm_thread_([this] { comm_loop(); }) {
  if (opts_.shard == ShardStage::Params) plan_units();
}

DdpReducer::~DdpReducer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  comm_thread_.join();
}

void DdpReducer::begin_step(long step) {
  std::lock_guard lock(mu_);
  step_ = step;
  next_to_launch_ = 0;
  completed_ = 0;
  queue_.clear();
}

void DdpReducer::on_grad_ready(std::size_t from) {
  if (opts_.overlap) launch_ready(from);
}

void DdpReducer::launch_ready(std::size_t from) {
  backend_.publish();  // the communication thread may read [from, num_params) once this returns
  const RunClock::TimePoint ready = clock_.now();
  std::unique_lock lock(mu_);
  bool any = false;
  // Buckets are in launch order with decreasing offsets: launch each one whose slice is final.
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].begin >= from) {
    queue_.push_back(Launched{next_to_launch_++, ready});
    any = true;
  }
  if (any) cv_.notify_all();
  // Note [Released gradient pages]: backward may run at most kReleaseAhead buckets ahead of the ring, or
  // a starved communication thread would release nothing before backward had written the whole buffer
  // (DeepSpeed's ZeRO-2 waits for its reduction stream the same way when its buckets are full).
  if (opts_.release != nullptr) {
    cv_.wait(lock, [this] { return next_to_launch_ - completed_ <= kReleaseAhead || error_ != nullptr; });
    lock.unlock();
    prefault_next_grads(from);
  }
}

// Note [Pages faulted in at once] (base/host_memory.h): backward goes on with the unit below `from`,
// whose gradients outside this rank's chunks were released by the last step; its GEMMs would read each
// such page (the zero page) and then write it, two faults a page.
void DdpReducer::prefault_next_grads(std::size_t from) {
  const auto below = std::find_if(unit_ranges_.rbegin(), unit_ranges_.rend(),
                                  [from](const ParamUnit& u) { return u.begin < from; });
  if (below == unit_ranges_.rend()) return;
  opts_.release->prefault(model_.grad_data() + below->begin, std::min(below->end, from) - below->begin,
                          opts_.pool);
}

void DdpReducer::finish_step() {
  launch_ready(0);  // without overlap everything launches now; with it, anything left over
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return completed_ == buckets_.size() || error_ != nullptr; });
  if (error_ != nullptr) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  // Note [GPU crypto shares the SMs]: an emulated GPU's backward pays, now that it is known, for the SMs
  // its AES-GCM kernels held (no other backend runs communication work on the compute units).
  if (auto* gpu = dynamic_cast<EmulatedBackend*>(&backend_)) gpu->settle_shared_units();
  measure_grads();
  clock_.advance_to(last_done_);  // the averaged gradients exist from then on
  if (profiler_ != nullptr) profiler_->add(Counter::Buckets, static_cast<int64_t>(buckets_.size()));
}

// Ring chunk c of a bucket (comm/allreduce/ring_geometry.h's partition).
comm::ElemRange DdpReducer::chunk(const Bucket& b, int c) const {
  return comm::balanced_block(b.size(), static_cast<std::size_t>(opts_.world), static_cast<std::size_t>(c));
}

// Note [Gradient norm order].
double DdpReducer::grad_sum_squares() {
  const float* g = model_.grad_data();
  if (!opts_.ordered_norm && !sharded()) return backend_.sum_squares(g, model_.num_params());
  const std::size_t nb = buckets_.size();
  const int world = opts_.world;
  const int own = (opts_.rank + 1) % world;  // RingGeometry::owned's chunk
  norm_parts_.assign(nb * static_cast<std::size_t>(world), 0.0);
  for (std::size_t b = 0; b < nb; ++b) {
    for (int c = 0; c < world; ++c) {
      if (sharded() && c != own) continue;
      const comm::ElemRange r = chunk(buckets_[b], c);
      norm_parts_[static_cast<std::size_t>(c) * nb + b] =
          backend_.sum_squares(g + buckets_[b].begin + r.offset, r.count);
    }
  }
  if (sharded()) gather_norm_parts();
  double total = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    for (int c = 0; c < world; ++c) total += norm_parts_[static_cast<std::size_t>(c) * nb + b];
  }
  return total;
}

// Chunk c of the parts is part c's nb doubles: the ring's partition of 2 nb P floats cuts it there, and
// rank r sends chunk r + 1 first, which is the one it filled. Labelled as the bucket after the last; timed
// with the optimizer, whose phase the trainer calls this in.
void DdpReducer::gather_norm_parts() {
  const int label = static_cast<int>(buckets_.size());
  auto* parts = reinterpret_cast<float*>(norm_parts_.data());
  const std::size_t floats = norm_parts_.size() * 2;
  if (!opts_.device_memory) {
    path_.all_gather(parts, floats, step_, label);
    return;
  }
  const std::size_t bytes = floats * sizeof(float);
  if (norm_device_.bytes() < bytes) norm_device_ = DeviceBuffer(backend_, bytes);
  backend_.copy_to_device(norm_device_.data(), parts, bytes);
  path_.all_gather(norm_device_.as<float>(), floats, step_, label);
  backend_.copy_to_host(parts, norm_device_.data(), bytes);
}

void DdpReducer::finish_update() {
  if (!sharded()) return;
  backend_.publish();
  if (units_.empty()) {
    all_gather_shards(model_.param_data(), step_, 0);
    return;
  }
  // ZeRO-3: the pinned buckets now, the others when a unit needs them (Note [ZeRO-3 units follow the
  // buckets]); what they held outside the shard is stale from here on.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (pinned_[b]) {
      path_.all_gather(model_.param_data() + buckets_[b].begin, buckets_[b].size(), step_,
                       static_cast<int>(b));
    } else {
      release(b);
    }
  }
  released_once_ = true;
}

void DdpReducer::all_gather_shards(float* x, long step, int first_label) {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bk = buckets_[b];
    path_.all_gather(x + bk.begin, bk.size(), step, first_label + static_cast<int>(b));
  }
}

void DdpReducer::comm_loop() {
  for (;;) {
    Launched job{};
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = queue_.front();
      queue_.pop_front();
      if (job.task == Task::Reduce) job.step = step_;
    }
    try {
      clock_.advance_to(job.ready);  // a bucket cannot leave before backward has made it final
      if (job.task == Task::Reduce) {
        run_reduce(job.bucket, job.step);
      } else {
        run_gather(job.bucket, job.step, job.label);
      }
    } catch (...) {
      std::lock_guard lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      continue;
    }
    const RunClock::TimePoint done = clock_.now();
    std::lock_guard lock(mu_);
    if (job.task == Task::Reduce) {
      last_done_ = std::max(last_done_, done);
      ++completed_;
    } else {
      held_[job.bucket] = Held::Present;
      gathered_at_[job.bucket] = done;
    }
    cv_.notify_all();
  }
}

void DdpReducer::run_reduce(std::size_t b, long step) {
  const Bucket& bk = buckets_[b];
  float* g = model_.grad_data() + bk.begin;
  const RunClock::TimePoint t0 = clock_.now();
  // Sharded: only this rank's chunk is finished, and only it is averaged (Note [Shard layout]).
  const comm::ElemRange mine = sharded() ? own_chunk(bk) : comm::ElemRange{.offset = 0, .count = bk.size()};
  if (sharded()) {
    path_.reduce_scatter(g, bk.size(), step, static_cast<int>(b));
  } else {
    path_.sum(g, bk.size(), step, static_cast<int>(b));
  }
  {
    ScopedPhase t(profiler_, Phase::Reduce, Lane::Comm, "average");
    backend_.scale(g + mine.offset, 1.0f / static_cast<float>(opts_.world), mine.count);
  }
  if (opts_.release != nullptr) {
    measure_grads();  // the bucket whole, beside whatever backward has written since
    release_grads(b, opts_.pool);
  }
  if (profiler_ != nullptr && profiler_->tracing()) {
    profiler_->record("bucket " + std::to_string(b), Lane::Comm, t0, clock_.now());
  }
}

// Between two releases the gradients' resident bytes only grow (backward writes), so their peak is met
// right before a release or after the last bucket: measured there.
void DdpReducer::measure_grads() {
  if (!opts_.measure_resident) return;
  const std::size_t now = resident_host_bytes(model_.grad_data(), model_.num_params() * sizeof(float));
  std::size_t peak = peak_grad_resident_.load();
  while (now > peak && !peak_grad_resident_.compare_exchange_weak(peak, now)) {
  }
}

// Note [Released gradient pages]: the bucket is final (backward has moved below it) and this rank reads
// only its own chunk from here on (the norm's part, the optimizer), so the rest goes.
void DdpReducer::release_grads(std::size_t b, PagePool* pool) {
  const Bucket& bk = buckets_[b];
  const comm::ElemRange own = own_chunk(bk);
  float* g = model_.grad_data() + bk.begin;
  opts_.release->zero(g, own.offset, pool);
  opts_.release->zero(g + own.offset + own.count, bk.size() - own.offset - own.count, pool);
}

// The released ranges are zeros already (their partial end pages are written again); the own chunks, the
// one part every step writes and keeps, are filled.
bool DdpReducer::zero_grads() {
  if (opts_.release == nullptr) return false;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const comm::ElemRange own = own_chunk(buckets_[b]);
    release_grads(b, nullptr);  // mostly released already: nothing resident to pool
    backend_.fill(model_.grad_data() + buckets_[b].begin + own.offset, 0.0f, own.count);
  }
  return true;
}

}  // namespace tt
