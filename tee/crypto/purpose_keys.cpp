#include "tee/crypto/purpose_keys.h"

#include "base/error.h"
#include "tee/crypto/hkdf.h"

namespace tt::tee {

namespace {

SecretBytes derive(const MasterKey& master, KeyPurpose purpose) {
  if (master.empty())
    throw InputError("deriving the " + std::string(derivation_label(purpose)) + " key: empty master key");
  return hkdf(master.view(), {}, bytes_of(derivation_label(purpose)), 32);
}

}  // namespace

std::string_view derivation_label(KeyPurpose purpose) {
  switch (purpose) {
    case KeyPurpose::Dataset:
      return "teetrain dataset";
    case KeyPurpose::Checkpoint:
      return "teetrain checkpoint";
    case KeyPurpose::Freshness:
      return "teetrain freshness";
    case KeyPurpose::Master:
    case KeyPurpose::Link:
    case KeyPurpose::Group:
    case KeyPurpose::GroupTraffic:
    case KeyPurpose::Stream:
    case KeyPurpose::Traffic:
    case KeyPurpose::Release:
    case KeyPurpose::Notice:
      break;
  }
  return "teetrain unknown";
}

DatasetKey derive_dataset_key(const MasterKey& master) {
  return DatasetKey(derive(master, KeyPurpose::Dataset));
}
CheckpointKey derive_checkpoint_key(const MasterKey& master) {
  return CheckpointKey(derive(master, KeyPurpose::Checkpoint));
}
FreshnessKey derive_freshness_key(const MasterKey& master) {
  return FreshnessKey(derive(master, KeyPurpose::Freshness));
}

}  // namespace tt::tee
