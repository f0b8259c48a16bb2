// Keys typed by what they are for. Every key is SecretBytes underneath (secure_bytes.h: wiped, never
// copied by accident, never printed); the type says which purpose it serves, so a dataset key handed
// where the checkpoint key is expected, or the master key where a sealing key is, does not compile.
// Purposes change only through the named HKDF derivations: the at-rest keys' below, the ring traffic's
// in traffic_keys.h (link and group secrets -> stream secrets -> the ratchet's epoch keys), and the
// handshake's, which makes link secrets (traffic_keys.h: derive_link_secret) and group secrets
// (comm/secure/secure_session.h).
//
//   dataset key    = HKDF(master, salt = "", info = "teetrain dataset",    32 bytes)
//   checkpoint key = HKDF(master, salt = "", info = "teetrain checkpoint", 32 bytes)
//   freshness key  = HKDF(master, salt = "", info = "teetrain freshness",  32 bytes)
//
// The master key never seals anything itself (a sealed file takes an AtRestKey: a dataset, checkpoint
// or freshness key), so releasing the dataset key to a rank does not release the checkpoint key.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "tee/bytes.h"
#include "tee/secure_bytes.h"

namespace tt::tee {

enum class KeyPurpose : std::uint8_t {
  Master,      // the data owner's key file: only derives the three below
  Dataset,     // seals and opens the sealed data
  Checkpoint,  // seals and opens the sealed checkpoints
  Freshness,   // the key owner's anti-rollback record (engine/checkpoint/freshness.h); never released
  Link,        // a ring link's secret from the attested handshake: derives its two streams' secrets
  Group,       // the secret all ranks share, released by rank 0 over the links
  // The ring's traffic (traffic_keys.h), comm/'s own secrets:
  GroupTraffic,  // from the group secret: derives the group and off-ring pair streams' secrets
  Stream,        // one key stream's epoch-0 secret: the only input of a KeyRatchet (ratchet.h)
  Traffic,       // one stream's AEAD key for one epoch: the only output of a KeyRatchet
  Release,       // a one-time key of one hop of a secret released by rank 0 (one message)
  Notice,        // from the group secret: authenticates failure notices (comm/secure/first_failure.h)
};

// A key for one purpose. Wrapping raw bytes is explicit (a key file read, a handshake's output, a key
// released over a link); changing purpose is a derivation, never a conversion.
template <KeyPurpose P>
class Key {
 public:
  static constexpr KeyPurpose kPurpose = P;
  Key() = default;
  explicit Key(SecretBytes bytes) : bytes_(std::move(bytes)) {}
  // A fresh random key (a master key being made, rank 0's group secret, a test's key).
  static Key random(std::size_t size = 32) { return Key(SecretBytes::random(size)); }

  Key clone() const { return Key(bytes_.clone()); }
  const SecretBytes& secret() const { return bytes_; }
  ByteView view() const { return bytes_.view(); }
  std::size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  std::string fingerprint() const { return bytes_.fingerprint(); }
  friend bool operator==(const Key& a, const Key& b) noexcept { return a.bytes_ == b.bytes_; }

 private:
  SecretBytes bytes_;
};

using MasterKey = Key<KeyPurpose::Master>;
using DatasetKey = Key<KeyPurpose::Dataset>;
using CheckpointKey = Key<KeyPurpose::Checkpoint>;
using FreshnessKey = Key<KeyPurpose::Freshness>;
using LinkSecret = Key<KeyPurpose::Link>;
using GroupSecret = Key<KeyPurpose::Group>;
using GroupTrafficSecret = Key<KeyPurpose::GroupTraffic>;
using StreamSecret = Key<KeyPurpose::Stream>;
using TrafficKey = Key<KeyPurpose::Traffic>;
using ReleaseKey = Key<KeyPurpose::Release>;
using NoticeKey = Key<KeyPurpose::Notice>;

// The HKDF info of a key derived from the master key ("teetrain dataset", ...).
std::string_view derivation_label(KeyPurpose purpose);
// The derivations from the master key (which must be non-empty: InputError otherwise).
DatasetKey derive_dataset_key(const MasterKey& master);
CheckpointKey derive_checkpoint_key(const MasterKey& master);
FreshnessKey derive_freshness_key(const MasterKey& master);

// What a sealed file is sealed under (sealed_file.h): a dataset, checkpoint or freshness key, never
// the master key nor a link, group or traffic secret. A view: the key must outlive it.
class AtRestKey {
 public:
  AtRestKey(const DatasetKey& k) : key_(k.secret()) {}     // NOLINT(google-explicit-constructor)
  AtRestKey(const CheckpointKey& k) : key_(k.secret()) {}  // NOLINT(google-explicit-constructor)
  AtRestKey(const FreshnessKey& k) : key_(k.secret()) {}   // NOLINT(google-explicit-constructor)
  const SecretBytes& secret() const { return key_; }

 private:
  const SecretBytes& key_;
};

}  // namespace tt::tee
