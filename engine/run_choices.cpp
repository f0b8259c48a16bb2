#include "engine/run_choices.h"

#include "base/error.h"

namespace tt {

namespace {

bool resolve(Toggle t, bool mode_default) {
  return t == Toggle::Auto ? mode_default : t == Toggle::On;
}

}  // namespace

std::string tee_conflict(const TeeSettings& o, bool gpu_gradients) {
  // The GPU seals with AES-GCM only: with ChaCha the host seals (auto), and asking for both is an error.
  if (o.mode != TeeMode::Off && gpu_gradients && o.device_crypto == Toggle::On &&
      o.cipher == tee::Cipher::ChaCha20Poly1305)
    return "--tee-device-crypto on: the GPU seals with AES-GCM only; use --cipher aes-256-gcm or "
           "aes-128-gcm, or --tee-device-crypto off for chacha20-poly1305";
  return {};
}

TeeSwitches resolve_tee(const TeeSettings& o, bool gpu_gradients) {
  if (const std::string conflict = tee_conflict(o, gpu_gradients); !conflict.empty())
    throw InputError(conflict);
  return resolve_tee_lenient(o, gpu_gradients);
}

TeeSwitches resolve_tee_lenient(const TeeSettings& o, bool gpu_gradients) {
  TeeSwitches s;
  s.on = o.mode != TeeMode::Off;
  s.cc = o.mode == TeeMode::Cc;
  const bool fast = o.mode == TeeMode::Fast;
  s.pipeline = s.on && resolve(o.pipeline, fast);
  s.forward_ag = s.on && resolve(o.forward_ag, fast);
  s.crypto_threads = o.crypto_threads > 0 ? o.crypto_threads : (fast ? 2 : 1);
  s.direct_ingress = !s.on || resolve(o.direct_ingress, fast);
  s.cipher = o.cipher;
  // The GPU seals with AES-GCM only (tee_conflict): with ChaCha the host seals.
  const bool gpu_cipher = s.cipher != tee::Cipher::ChaCha20Poly1305;
  s.device_crypto = s.on && gpu_gradients && gpu_cipher && resolve(o.device_crypto, fast);
  return s;
}

}  // namespace tt
