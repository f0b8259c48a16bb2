#include "data/sealed_ingress.h"

#include <array>
#include <thread>

#include "tee/bytes.h"
#include "tee/errors.h"
#include "tee/secure_bytes.h"

namespace tt {

std::string_view ingress_mode_name(IngressMode m) {
  return m == IngressMode::Bounce ? "bounce" : "direct";
}

void IngressThrottle::pace(std::uint64_t bytes, Clock::time_point started) {
  if (!enabled()) return;
  const auto carry = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) / bytes_per_s_));
  ready_ = std::max(ready_, started) + carry;
  std::this_thread::sleep_until(ready_);
}

namespace {

// Associated data of one staging message: label || be64(first_sample) || be32(count) || be64(counter).
constexpr std::string_view kAadLabel = "teetrain ingress v1";
using IngressAad = std::array<std::uint8_t, kAadLabel.size() + 8 + 4 + 8>;

IngressAad ingress_aad(std::uint64_t first_sample, int count, std::uint64_t counter) {
  IngressAad aad{};
  std::copy(kAadLabel.begin(), kAadLabel.end(), aad.begin());
  std::uint8_t* p = aad.data() + kAadLabel.size();
  tee::store_be64(p, first_sample);
  tee::store_be32(p + 8, static_cast<std::uint32_t>(count));
  tee::store_be64(p + 12, counter);
  return aad;
}

}  // namespace

BounceLink::BounceLink(tee::Cipher cipher, std::uint32_t rank, Profiler* profiler,
                       std::unique_ptr<BounceBuffer> buffer)
    : rank_(rank),
      buffer_(buffer ? std::move(buffer) : std::make_unique<SharedBounceBuffer>()),
      profiler_(profiler) {
  const tee::SecretBytes link_key = tee::SecretBytes::random(tee::cipher_key_size(cipher));
  cpu_.emplace(cipher, link_key.view(), rank);
  device_.emplace(cipher, link_key.view(), rank);
}  // link_key is wiped here: only the two cipher contexts keep it

void BounceLink::transfer(tee::MutableByteView batch, std::uint64_t first_sample, int count) {
  // CPU side: seal into the bounce buffer.
  cpu_->seal(ingress_aad(first_sample, count, cpu_->next_counter()), batch,
             buffer_->stage(batch.size() + tee::kTagSize));
  {  // Device side: expected position and context come from its own state, never from the buffer.
    const std::uint64_t counter = device_->next_counter();
    // A staged message of the wrong size fails to open too (and spends the position, as any failure).
    const bool ok = device_->try_open(ingress_aad(first_sample, count, counter), buffer_->collect(), batch);
    if (!ok) {
      throw IntegrityError("ingress bounce buffer of rank " + std::to_string(rank_) + ", message " +
                           std::to_string(counter) + " (samples " + std::to_string(first_sample) + " + " +
                           std::to_string(count) + ") failed to open (tampered, replayed or truncated)");
    }
  }
  if (profiler_ != nullptr) {
    const auto n = static_cast<int64_t>(batch.size());
    profiler_->add(Counter::MessagesSealed, 1);
    profiler_->add(Counter::BytesSealed, n);
    profiler_->add(Counter::MessagesOpened, 1);
    profiler_->add(Counter::BytesOpened, n);
  }
}

}  // namespace tt
