#include "platform/emulated/virtual_seal_channel.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "tee/bytes.h"

namespace tt::platform {

double CryptoCostModel::seconds(std::size_t messages, std::size_t bytes) const {
  if (messages == 0) return 0.0;
  // A batch spreads over min(messages, cores) cores; the cipher's bytes and the per-message cost alike.
  const double c =
      static_cast<double>(std::clamp<std::size_t>(static_cast<std::size_t>(std::max(cores, 1)), 1, messages));
  const double crypto_bytes = static_cast<double>(bytes) * (bounce_reencrypt ? 2.0 : 1.0);
  return (crypto_bytes / (aead_gbps * 1e9) + static_cast<double>(messages) * per_message_us * 1e-6) / c;
}

std::string CryptoCostModel::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s AES-GCM %.4g GB/s", where.c_str(), aead_gbps);
  std::string out = buf;
  if (where != "GPU") out += " x " + std::to_string(cores) + (cores == 1 ? " core" : " cores");
  std::snprintf(buf, sizeof buf, "%s", bounce_reencrypt ? ", bounce buffers re-encrypted" : "");
  out += buf;
  if (per_message_us > 0) {
    std::snprintf(buf, sizeof buf, ", %.3g us per message", per_message_us);
    out += buf;
  }
  return out;
}

VirtualSealChannel::VirtualSealChannel(comm::Channel& inner, CryptoCostModel host, RunClock& clock,
                                       Profiler* profiler, EmulatedBackend* sms)
    : inner_(inner), host_(host), clock_(clock), prof_(profiler), sms_(sms) {
  if (inner.pass_through()) throw InputError("a virtual sealing channel needs a sealing channel to wrap");
  if (!(host.aead_gbps > 0))
    throw InputError("the modelled host's AES-GCM rate must be > 0 GB/s (--host-aead-gbps)");
  if (host.cores < 1)
    throw InputError("the modelled host needs at least 1 crypto core (--host-crypto-cores)");
  if (host.per_message_us < 0) throw InputError("the per-message cost must be >= 0 us (--host-message-us)");
}

std::string VirtualSealChannel::name() const {
  return inner_.name() + " (sealed tokens; " + host_.describe() + ", virtual time)";
}

VirtualSealChannel::Token VirtualSealChannel::token_of(std::size_t length) {
  Token t{};
  auto* p = reinterpret_cast<std::uint8_t*>(t.data());
  tee::store_be64(p, length);
  tee::store_be64(p + 8, ~static_cast<std::uint64_t>(length));
  return t;
}

void VirtualSealChannel::seal(const comm::MessageContext& ctx, std::span<const std::byte> plain,
                              std::span<std::byte> wire) {
  const SealJob job{ctx, plain, wire};
  seal_batch({&job, 1});
}

void VirtualSealChannel::open(const comm::MessageContext& ctx, std::span<const std::byte> wire,
                              std::span<std::byte> plain) {
  const OpenJob job{ctx, wire, plain};
  open_batch({&job, 1});
}

void VirtualSealChannel::seal_batch(std::span<const SealJob> jobs) {
  tokens_.resize(jobs.size());
  seal_jobs_.clear();
  std::size_t bytes = 0, token_bytes = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const SealJob& j = jobs[i];
    const std::size_t k = std::min(j.plain.size(), kTokenBytes);
    tokens_[i] = token_of(j.plain.size());
    seal_jobs_.push_back(
        {j.ctx, std::span<const std::byte>(tokens_[i]).first(k), j.wire.first(k + overhead())});
    bytes += j.plain.size();
    token_bytes += k;
  }
  inner_.seal_batch(seal_jobs_);
  charge(Phase::Seal, jobs.size(), bytes, token_bytes);
}

void VirtualSealChannel::open_batch(std::span<const OpenJob> jobs) {
  tokens_.resize(jobs.size());
  open_jobs_.clear();
  std::size_t bytes = 0, token_bytes = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const OpenJob& j = jobs[i];
    const std::size_t k = std::min(j.plain.size(), kTokenBytes);
    if (j.wire.size() < k + overhead()) {
      throw IntegrityError("sealed token too short (" + std::to_string(j.wire.size()) + " bytes) at " +
                           to_string(j.ctx));
    }
    open_jobs_.push_back({j.ctx, j.wire.first(k + overhead()), std::span<std::byte>(tokens_[i]).first(k)});
    bytes += j.plain.size();
    token_bytes += k;
  }
  inner_.open_batch(open_jobs_);  // throws naming the context on a bad tag, replay or reorder
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::size_t k = open_jobs_[i].plain.size();
    const Token want = token_of(jobs[i].plain.size());
    if (!std::equal(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(k), tokens_[i].begin()))
      throw IntegrityError("sealed token names another length at " + to_string(jobs[i].ctx));
  }
  charge(Phase::Open, jobs.size(), bytes, token_bytes);
}

// The modelled cost moves this thread's virtual time; counters count the messages' full bytes (the
// inner channel counted the tokens'). Crypto threads only overlap their own batch: both ring
// directions of a hop run on this one thread, one after the other, as the wall-clock ring does.
void VirtualSealChannel::charge(Phase phase, std::size_t messages, std::size_t bytes,
                                std::size_t token_bytes) {
  const double s = host_.seconds(messages, bytes);
  const RunClock::TimePoint begin = clock_.now();
  clock_.elapse(s);
  if (sms_ != nullptr) sms_->lend_sms(begin, clock_.now());  // Note [GPU crypto shares the SMs]
  if (prof_ == nullptr) return;
  prof_->add(phase == Phase::Seal ? Counter::BytesSealed : Counter::BytesOpened,
             static_cast<int64_t>(bytes - token_bytes));
  prof_->add_time(phase, s);
  if (prof_->tracing())
    prof_->record(
        std::string(phase == Phase::Seal ? "seal (modelled " : "open (modelled ") + host_.where + ")",
        Lane::Crypto, begin, clock_.now());
}

}  // namespace tt::platform
