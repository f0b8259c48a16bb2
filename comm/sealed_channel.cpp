#include "comm/sealed_channel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "engine/core/error.h"
#include "tee/bytes.h"
#include "tee/hkdf.h"
#include "tee/nonce.h"

namespace tt::comm {

namespace {

enum class StreamKind : std::uint8_t { Link = 1, Group = 2, Pair = 3 };

constexpr std::size_t kAadSize = 75;

tee::ByteView u8(std::span<const std::byte> s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
tee::MutableByteView u8(std::span<std::byte> s) {
  return {reinterpret_cast<std::uint8_t*>(s.data()), s.size()};
}

std::uint32_t rank_field(int r) {
  return static_cast<std::uint32_t>(r);  // kAnyRank (-1) becomes 0xffffffff
}

// The associated data of one message (layout in sealed_channel.h). The length is the plaintext size
// the caller passes, not ctx.length: on the receiving side that is the size the receiver expects.
std::array<std::uint8_t, kAadSize> make_aad(const std::array<std::uint8_t, 16>& run_id, std::uint64_t epoch,
                                            const MessageContext& c, std::uint64_t length, tee::Cipher cipher,
                                            StreamKind kind) {
  std::array<std::uint8_t, kAadSize> a{};
  std::uint8_t* p = a.data();
  const std::string_view magic = "TTM1";
  p = std::copy(magic.begin(), magic.end(), p);
  p = std::copy(run_id.begin(), run_id.end(), p);
  tee::store_be64(p, epoch);
  tee::store_be64(p + 8, c.step);
  tee::store_be32(p + 16, c.bucket);
  p[20] = static_cast<std::uint8_t>(c.phase);
  tee::store_be32(p + 21, c.hop);
  tee::store_be32(p + 25, c.chunk);
  tee::store_be32(p + 29, c.segment);
  tee::store_be32(p + 33, rank_field(c.origin));
  tee::store_be32(p + 37, rank_field(c.sender));
  tee::store_be32(p + 41, rank_field(c.receiver));
  tee::store_be64(p + 45, length);
  p[53] = static_cast<std::uint8_t>(cipher);
  p[54] = static_cast<std::uint8_t>(kind);
  return a;
}

// A 32-byte stream secret derived from the group secret; the label names the stream.
tee::SecretBytes derive_stream_secret(const tee::SecretBytes& group, std::string_view label, int a, int b) {
  std::vector<std::uint8_t> info(label.begin(), label.end());
  info.resize(label.size() + 8);
  tee::store_be32(info.data() + label.size(), rank_field(a));
  tee::store_be32(info.data() + label.size() + 4, rank_field(b));
  return tee::hkdf_expand(group.view(), info, 32);
}

}  // namespace

ChannelIntegrityError::ChannelIntegrityError(int rank, int peer, const MessageContext& ctx,
                                             const std::string& reason)
    : tee::IntegrityError("rank " + std::to_string(rank) + ": sealed message from rank " +
                          std::to_string(peer) + " failed to open (" + reason + ") at " + to_string(ctx)),
      rank_(rank),
      peer_(peer),
      ctx_(ctx),
      reason_(reason) {}

// One key of one stream for one epoch. Immutable once built; shared by the tasks that use it, so a
// batch may straddle a rekey while the ratchet itself has already wiped the old secret.
struct SealedChannel::EpochKey {
  std::uint64_t epoch = 0;
  tee::SecretBytes key;
  std::string fingerprint;  // only with debug_record_nonces
};

struct SealedChannel::Stream {
  StreamKind kind;
  int sender;
  int receiver;
  std::size_t index;
  tee::KeyRatchet ratchet;
  tee::NonceSequence nonces;
  std::shared_ptr<const EpochKey> key;
};

struct SealedChannel::Task {
  bool sealing = true;
  MessageContext ctx;
  std::span<const std::byte> in;
  std::span<std::byte> out;
  StreamKind kind = StreamKind::Link;
  std::size_t stream = 0;
  std::shared_ptr<const EpochKey> key;
  std::uint64_t counter = 0;
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
    : opt_(options),
      keys_(std::move(keys)),
      prof_(profiler),
      threads_(std::max<std::size_t>(options.crypto_threads, 1)) {
  if (opt_.world_size < 1 || opt_.rank < 0 || opt_.rank >= opt_.world_size)
    throw RunError("sealed channel: rank " + std::to_string(opt_.rank) + " outside world of " +
                   std::to_string(opt_.world_size));
  aeads_.resize(threads_);
  if (threads_ > 1) pool_ = std::make_unique<Pool>(threads_ - 1);
}

SealedChannel::~SealedChannel() = default;

std::string SealedChannel::name() const {
  return "sealed(" + std::string(tee::cipher_name(opt_.cipher)) + ")";
}

SealedChannel::Stream& SealedChannel::stream_for(const MessageContext& ctx, bool sealing) {
  const int p = opt_.world_size;
  const int me = opt_.rank;
  const bool sender_ok = ctx.sender >= 0 && ctx.sender < p;
  const bool receiver_ok = ctx.receiver == kAnyRank || (ctx.receiver >= 0 && ctx.receiver < p);
  const bool mine =
      sealing ? ctx.sender == me : (ctx.receiver == me || (ctx.receiver == kAnyRank && ctx.sender != me));
  if (!sender_ok || !receiver_ok || ctx.sender == ctx.receiver || !mine) {
    throw RunError("sealed channel: rank " + std::to_string(me) + " cannot " + (sealing ? "seal" : "open") +
                   " a message at " + to_string(ctx));
  }
  const StreamKind kind = ctx.receiver == kAnyRank               ? StreamKind::Group
                          : ctx.receiver == (ctx.sender + 1) % p ? StreamKind::Link
                                                                 : StreamKind::Pair;
  for (auto& s : streams_) {
    if (s->kind == kind && s->sender == ctx.sender && s->receiver == ctx.receiver) return *s;
  }
  tee::SecretBytes secret;
  if (kind == StreamKind::Link) {
    // Sealing on a ring link is always me -> next; opening is always prev -> me.
    secret = (sealing ? keys_.send : keys_.recv).clone();
  } else if (!keys_.group.empty()) {
    secret = kind == StreamKind::Group
                 ? derive_stream_secret(keys_.group, "teetrain group stream v1", ctx.sender, kAnyRank)
                 : derive_stream_secret(keys_.group, "teetrain pair stream v1", ctx.sender, ctx.receiver);
  }
  if (secret.size() != 32)
    throw RunError("sealed channel: rank " + std::to_string(me) + " has no key for " + to_string(ctx));
  auto s =
      std::make_unique<Stream>(Stream{kind, ctx.sender, ctx.receiver, streams_.size(),
                                      tee::KeyRatchet(std::move(secret), opt_.cipher, opt_.rekey),
                                      tee::NonceSequence(static_cast<std::uint32_t>(ctx.sender)), nullptr});
  auto k = std::make_shared<EpochKey>();
  k->key = s->ratchet.key().clone();
  if (opt_.debug_record_nonces) k->fingerprint = k->key.fingerprint();
  s->key = std::move(k);
  for (auto& per_thread : aeads_) per_thread.resize(streams_.size() + 1);
  streams_.push_back(std::move(s));
  return *streams_.back();
}

// Both ends call this for the same messages of a stream in the same order, so they rekey at the same
// message and agree on every counter.
void SealedChannel::assign(Stream& s, std::uint64_t length, Task& task, bool sealing) {
  if (s.ratchet.exhausted()) {
    s.ratchet.advance();
    s.nonces = tee::NonceSequence(static_cast<std::uint32_t>(s.sender));  // fresh key: counters restart
    auto k = std::make_shared<EpochKey>();
    k->epoch = s.ratchet.epoch();
    k->key = s.ratchet.key().clone();
    if (opt_.debug_record_nonces) k->fingerprint = k->key.fingerprint();
    s.key = std::move(k);
    ++rekeys_;
    if (prof_ != nullptr) prof_->add(Counter::Rekeys, 1);
  }
  task.kind = s.kind;
  task.stream = s.index;
  task.key = s.key;
  task.counter = s.nonces.next().counter();
  s.ratchet.record(length);
  if (sealing && opt_.debug_record_nonces) {
    nonces_.push_back({s.key->fingerprint, s.key->epoch, static_cast<std::uint32_t>(s.sender), task.counter});
  }
}

void SealedChannel::run_one(Task& t, std::size_t thread) {
  AeadSlot& slot = aeads_[thread][t.stream];
  if (!slot.aead || slot.epoch != t.key->epoch) {
    slot.aead.emplace(opt_.cipher, t.key->key.view());
    slot.epoch = t.key->epoch;
  }
  const std::size_t n = t.sealing ? t.in.size() : t.out.size();
  const auto aad = make_aad(opt_.run_id, t.key->epoch, t.ctx, n, opt_.cipher, t.kind);
  const auto nonce = tee::Nonce::make(static_cast<std::uint32_t>(t.ctx.sender), t.counter);
  const auto epoch32 = static_cast<std::uint32_t>(t.key->epoch);
  if (t.sealing) {
    ScopedPhase timer(prof_, Phase::Seal, Lane::Crypto, "seal");
    slot.aead->seal_append_tag(nonce, aad, u8(t.in), u8(t.out.first(n + tee::kTagSize)));
    std::uint8_t* header = u8(t.out).data() + n + tee::kTagSize;
    tee::store_be32(header, epoch32);
    tee::store_be64(header + 4, t.counter);
    return;
  }
  bool ok = false;
  {
    ScopedPhase timer(prof_, Phase::Open, Lane::Crypto, "open");
    ok = slot.aead->try_open_with_tag(nonce, aad, u8(t.in.first(n + tee::kTagSize)), u8(t.out));
  }
  // The header never decides how to open; it is read only to say what went wrong, and checked after
  // a good open so that no wire byte can change unnoticed.
  const std::uint8_t* header = u8(t.in).data() + n + tee::kTagSize;
  const std::uint32_t wire_epoch = tee::load_be32(header);
  const std::uint64_t wire_counter = tee::load_be64(header + 4);
  if (ok && wire_epoch == epoch32 && wire_counter == t.counter) return;
  std::string reason;
  if (ok) {
    std::fill(t.out.begin(), t.out.end(), std::byte{0});
    reason = "clear header tampered";
  } else if (wire_epoch != epoch32) {
    reason = "wrong epoch: message says key epoch " + std::to_string(wire_epoch) + ", expected " +
             std::to_string(epoch32);
  } else if (wire_counter != t.counter) {
    reason = "replayed or reordered: nonce counter " + std::to_string(wire_counter) + ", expected " +
             std::to_string(t.counter);
  } else {
    reason = "tag mismatch: tampered or wrong key";
  }
  const int prev = (opt_.rank + opt_.world_size - 1) % opt_.world_size;
  throw ChannelIntegrityError(opt_.rank, t.ctx.receiver == kAnyRank ? prev : t.ctx.sender, t.ctx, reason);
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
  for (const auto& j : jobs) {
    if (j.wire.size() != j.plain.size() + kOverhead)
      throw RunError("sealed channel: wire buffer of " + std::to_string(j.wire.size()) + " bytes for " +
                     std::to_string(j.plain.size()) + " plaintext bytes at " + to_string(j.ctx));
    Task& t = tasks_.emplace_back();
    t.sealing = true;
    t.ctx = j.ctx;
    t.in = j.plain;
    t.out = j.wire;
    assign(stream_for(j.ctx, true), j.plain.size(), t, true);
    bytes += j.plain.size();
  }
  run(tasks_);
  if (prof_ != nullptr) {
    prof_->add(Counter::MessagesSealed, static_cast<int64_t>(jobs.size()));
    prof_->add(Counter::RingSealed, std::count_if(jobs.begin(), jobs.end(), [](const SealJob& j) {
                 return is_ring_phase(j.ctx.phase);
               }));
    prof_->add(Counter::BytesSealed, static_cast<int64_t>(bytes));
  }
}

void SealedChannel::open_batch(std::span<const OpenJob> jobs) {
  tasks_.clear();
  std::uint64_t bytes = 0;
  for (const auto& j : jobs) {
    if (j.wire.size() != j.plain.size() + kOverhead) {
      const int prev = (opt_.rank + opt_.world_size - 1) % opt_.world_size;
      throw ChannelIntegrityError(opt_.rank, j.ctx.receiver == kAnyRank ? prev : j.ctx.sender, j.ctx,
                                  std::string(j.wire.size() < j.plain.size() + kOverhead ? "short" : "long") +
                                      " message: " + std::to_string(j.wire.size()) + " of " +
                                      std::to_string(j.plain.size() + kOverhead) + " wire bytes");
    }
    Task& t = tasks_.emplace_back();
    t.sealing = false;
    t.ctx = j.ctx;
    t.in = j.wire;
    t.out = j.plain;
    assign(stream_for(j.ctx, false), j.plain.size(), t, false);
    bytes += j.plain.size();
  }
  run(tasks_);
  if (prof_ != nullptr) {
    prof_->add(Counter::MessagesOpened, static_cast<int64_t>(jobs.size()));
    prof_->add(Counter::RingOpened, std::count_if(jobs.begin(), jobs.end(), [](const OpenJob& j) {
                 return is_ring_phase(j.ctx.phase);
               }));
    prof_->add(Counter::BytesOpened, static_cast<int64_t>(bytes));
  }
}

}  // namespace tt::comm
