// `--adversary mitm-relay`: a man in the middle that runs the whole handshake with each end of one
// ring link itself, and then re-seals every message between them.
//
// Why `mitm` alone is caught without a root of trust: it swaps the evidence in one direction only, so
// the two ranks derive different link secrets and the key confirmation on the link fails. The relay
// swaps both directions: rank a receives evidence claiming to be rank b's (a's nonce answered, b's
// measurements, the relay's own key-exchange key, signed by a key the relay made up) and rank b the
// same for a, so each rank agrees a secret with the relay. It rewrites both key confirmations, opens
// each key rank 0 releases over the link (the group key, the dataset and checkpoint keys) and seals it
// again under the other side's secret, and re-seals every sealed ring message: it knows the key but
// not the message's place in the run, which the associated data binds, so it solves the associated
// data from the genuine tag (comm/adversary/adversary_gcm.h), opens the message, and seals it for the
// receiver. Under `--attestation none` nothing in the protocol tells the relay from the peer: the run
// finishes and the relay has read every message between the two ranks. With a root of trust, evidence signed
// by a key the vendor never certified is refused at attestation (exit 3) — which is the point.
//
// The relay speaks the handshake's public protocol (comm/secure/secure_session.cpp: key confirmation and key
// release labels, the transcript and traffic keys), as a real attacker would; if that protocol changes,
// the relay's CLI test (tests/cli/adversary.sh) fails until the relay follows.
//
// It lives in the transport decorator of rank b = a+1, which sees everything that crosses the link in
// both directions: b's sends to a and b's receives from a. Only AES-256-GCM (the default cipher).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tee/crypto/ratchet.h"
#include "tee/identity/attestation.h"
#include "tee/identity/x509.h"

namespace tt::comm {

// A device identity of the relay's own making: a vendor root the ranks do not trust, one device.
tee::DeviceIdentity relay_device_identity(int rank);

class Relay {
 public:
  using Say = std::function<void(const std::string&)>;
  // The relay between ranks a and b = (a+1) % world; `say` prints what it does ("adversary: ...").
  Relay(int a, int world, Say say);
  ~Relay();

  // What the relay delivers in place of `data`, which rank `from` sent to rank `to` (one of a and b
  // each) with `tag`; nullopt: the message passes unchanged.
  std::optional<std::vector<std::byte>> relay(int from, int to, int tag, std::span<const std::byte> data);

  // One line for the adversary's report: what the relay read.
  std::string summary() const;

 private:
  struct Side;
  Side& side(int rank);
  bool both_evidences() const;
  std::vector<std::byte> forge_evidence(int from, int to, std::span<const std::byte> data);
  std::vector<std::byte> confirm(int from, int to);
  std::optional<std::vector<std::byte>> release(int from, int to, std::span<const std::byte> data);
  std::optional<std::vector<std::byte>> reseal(int from, int to, int tag, std::span<const std::byte> data);
  void note_plaintext(int from, int to, int tag, std::span<const std::uint8_t> plain);

  int a_;
  int b_;
  int world_;
  Say say_;
  std::vector<std::unique_ptr<Side>> sides_;  // [0]: rank a, [1]: rank b
  std::uint64_t releases_ = 0;                // key releases seen so far (their sequence number)
  std::vector<std::string> keys_read_;
  std::array<std::uint8_t, 16> run_id_{};
  bool have_run_id_ = false;
  std::size_t resealed_ = 0;
  std::size_t bytes_read_ = 0;
  bool printed_gradient_ = false;
};

}  // namespace tt::comm
