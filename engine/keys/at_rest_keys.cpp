#include "engine/keys/at_rest_keys.h"

#include "base/error.h"
#include "engine/keys/key_file.h"

namespace tt {

AtRestKeys release_at_rest_keys(comm::Transport& transport, comm::SessionKeys& keys,
                                const std::string& key_file, bool sealed_data, bool need_ckpt_key,
                                const WarnFn& warn) {
  AtRestKeys k;
  if (!sealed_data && !need_ckpt_key) return k;
  std::optional<tee::MasterKey> master;
  if (transport.rank() == 0) {
    // Sealed data opens only under its owner's key; without it, the key seals new checkpoints.
    master = load_key_file(key_file, warn, sealed_data ? KeyUse::TrainSealed : KeyUse::SealNew);
  }
  if (sealed_data) {
    std::optional<tee::DatasetKey> mine;
    if (master) mine = tee::derive_dataset_key(*master);
    k.dataset = comm::release_key(transport, keys, mine ? &*mine : nullptr, kMasterKeySize, "dataset key");
  }
  if (need_ckpt_key) {
    std::optional<tee::CheckpointKey> mine;
    if (master) mine = tee::derive_checkpoint_key(*master);
    k.checkpoint =
        comm::release_key(transport, keys, mine ? &*mine : nullptr, kMasterKeySize, "checkpoint key");
    k.master = std::move(master);
  }
  return k;
}

}  // namespace tt
