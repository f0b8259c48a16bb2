#include "engine/at_rest_keys.h"

#include <filesystem>

#include "base/error.h"
#include "engine/key_file.h"

namespace tt {

AtRestKeys release_at_rest_keys(comm::Transport& transport, comm::SessionKeys& keys,
                                const std::string& key_file, bool sealed_data, bool need_ckpt_key,
                                const std::function<void(const std::string&)>& warn) {
  AtRestKeys k;
  if (!sealed_data && !need_ckpt_key) return k;
  std::optional<tee::SecretBytes> master;
  if (transport.rank() == 0) {
    std::error_code ec;  // a path the system cannot even look up (too long, ...) is load_key_file's to word
    if (!std::filesystem::exists(key_file, ec) && !ec) {
      throw InputError("--key-file " + key_file +
                       ": no such key file; sealed data and TEE checkpoints need one " +
                       "(create it with `teetrain keygen --out " + key_file + "`)");
    }
    master = load_key_file(key_file, warn);
  }
  if (sealed_data) {
    std::optional<tee::SecretBytes> mine;
    if (master) mine = derive_dataset_key(*master);
    k.dataset = comm::release_secret(transport, keys, mine ? &*mine : nullptr, kMasterKeySize, "dataset key");
  }
  if (need_ckpt_key) {
    std::optional<tee::SecretBytes> mine;
    if (master) mine = derive_checkpoint_key(*master);
    k.checkpoint =
        comm::release_secret(transport, keys, mine ? &*mine : nullptr, kMasterKeySize, "checkpoint key");
  }
  return k;
}

}  // namespace tt
