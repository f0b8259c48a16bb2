#include "comm/secure/sealed_channel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::comm {

namespace {

tee::ByteView u8(std::span<const std::byte> s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
tee::MutableByteView u8(std::span<std::byte> s) {
  return {reinterpret_cast<std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

struct SealedChannel::Task {
  bool sealing = true;
  SealTicket ticket;
  std::span<const std::byte> in;
  std::span<std::byte> out;
  std::exception_ptr error;
};

struct SealedChannel::AeadSlot {
  std::uint64_t epoch = 0;
  std::optional<tee::Aead> aead;
};

// Persistent crypto workers. run(fn) calls fn(i) on workers 1..n and fn(0) on the caller, and returns
// when all are done. fn must not throw (tasks catch their own errors).
class SealedChannel::Pool {
 public:
  explicit Pool(std::size_t workers) {
    for (std::size_t i = 1; i <= workers; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  void run(const std::function<void(std::size_t)>& fn) {
    {
      std::lock_guard lk(mu_);
      fn_ = &fn;
      pending_ = threads_.size();
      ++generation_;
    }
    wake_.notify_all();
    fn(0);
    std::unique_lock lk(mu_);
    done_.wait(lk, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void loop(std::size_t index) {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(std::size_t)>* fn = nullptr;
      {
        std::unique_lock lk(mu_);
        wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        fn = fn_;
      }
      (*fn)(index);
      std::lock_guard lk(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::size_t)>* fn_ = nullptr;
  std::size_t pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

SealedChannel::SealedChannel(SealedChannelOptions options, ChannelKeys keys, Profiler* profiler)
    : streams_(options, std::move(keys), profiler),
      prof_(profiler),
      threads_(std::max<std::size_t>(options.crypto_threads, 1)) {
  aeads_.resize(threads_);
  if (threads_ > 1) pool_ = std::make_unique<Pool>(threads_ - 1);
}

SealedChannel::~SealedChannel() = default;

std::string SealedChannel::name() const {
  return "sealed(" + std::string(tee::cipher_name(options().cipher)) + ")";
}

void SealedChannel::run_one(Task& t, std::size_t thread) {
  const SealTicket& k = t.ticket;
  std::vector<AeadSlot>& slots = aeads_[thread];
  if (slots.size() <= k.stream) slots.resize(k.stream + 1);
  AeadSlot& slot = slots[k.stream];
  if (!slot.aead || slot.epoch != k.key->epoch) {
    slot.aead.emplace(options().cipher, k.key->key.view());
    slot.epoch = k.key->epoch;
  }
  const std::size_t n = t.sealing ? t.in.size() : t.out.size();
  if (t.sealing) {
    ScopedPhase timer(prof_, Phase::Seal, Lane::Crypto, "seal");
    slot.aead->seal_append_tag(k.at, k.aad, u8(t.in), u8(t.out.first(n + tee::kTagSize)));
    std::copy(k.header.begin(), k.header.end(), u8(t.out).data() + n + tee::kTagSize);
    return;
  }
  bool ok = false;
  {
    ScopedPhase timer(prof_, Phase::Open, Lane::Crypto, "open");
    ok = slot.aead->try_open_with_tag(k.at, k.aad, u8(t.in.first(n + tee::kTagSize)), u8(t.out));
  }
  const std::string reason = SealStreams::open_failure(ok, u8(t.in).data() + n + tee::kTagSize, k);
  if (reason.empty()) return;
  if (ok) std::fill(t.out.begin(), t.out.end(), std::byte{0});  // opened, but the header was changed
  throw streams_.failure(k.ctx, reason);
}

void SealedChannel::run(std::vector<Task>& tasks) {
  std::atomic<std::size_t> next{0};
  const std::function<void(std::size_t)> work = [&](std::size_t thread) {
    for (std::size_t i = next.fetch_add(1); i < tasks.size(); i = next.fetch_add(1)) {
      try {
        run_one(tasks[i], thread);
      } catch (...) {
        tasks[i].error = std::current_exception();
      }
    }
  };
  if (pool_ && tasks.size() > 1) {
    pool_->run(work);
  } else {
    work(0);
  }
  // Report the first failure in job order, so the error does not depend on thread timing.
  for (auto& t : tasks) {
    if (t.error) std::rethrow_exception(t.error);
  }
  tasks.clear();  // drop the references to old epoch keys now, keep the capacity
}

void SealedChannel::seal(const MessageContext& ctx, std::span<const std::byte> plain,
                         std::span<std::byte> wire) {
  const SealJob job{ctx, plain, wire};
  seal_batch(std::span(&job, 1));
}

void SealedChannel::open(const MessageContext& ctx, std::span<const std::byte> wire,
                         std::span<std::byte> plain) {
  const OpenJob job{ctx, wire, plain};
  open_batch(std::span(&job, 1));
}

void SealedChannel::seal_batch(std::span<const SealJob> jobs) {
  tasks_.clear();
  std::uint64_t bytes = 0;
  std::size_t ring = 0;
  for (const auto& j : jobs) {
    if (j.wire.size() != j.plain.size() + kOverhead)
      throw RunError("sealed channel: wire buffer of " + std::to_string(j.wire.size()) + " bytes for " +
                     std::to_string(j.plain.size()) + " plaintext bytes at " + to_string(j.ctx));
    tasks_.push_back({true, streams_.next(j.ctx, j.plain.size(), true), j.plain, j.wire, nullptr});
    bytes += j.plain.size();
    ring += is_allreduce_phase(j.ctx.phase) ? 1 : 0;
  }
  run(tasks_);
  streams_.count(true, jobs.size(), ring, bytes);
}

void SealedChannel::open_batch(std::span<const OpenJob> jobs) {
  tasks_.clear();
  std::uint64_t bytes = 0;
  std::size_t ring = 0;
  for (const auto& j : jobs) {
    if (j.wire.size() != j.plain.size() + kOverhead)
      throw streams_.wrong_length(j.ctx, j.wire.size(), j.plain.size());
    tasks_.push_back({false, streams_.next(j.ctx, j.plain.size(), false), j.wire, j.plain, nullptr});
    bytes += j.plain.size();
    ring += is_allreduce_phase(j.ctx.phase) ? 1 : 0;
  }
  run(tasks_);
  streams_.count(false, jobs.size(), ring, bytes);
}

}  // namespace tt::comm
