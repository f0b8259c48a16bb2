// Keys at rest. Rank 0 stands in for the data owner: it reads the master key file and releases the
// dataset and checkpoint keys to every rank over the attested, sealed links — never in clear.
#pragma once
#include <optional>
#include <string>

#include "base/warning.h"
#include "comm/secure/secure_session.h"
#include "comm/transport.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

struct AtRestKeys {
  std::optional<tee::DatasetKey> dataset;        // sealed data: opens the shards
  std::optional<tee::CheckpointKey> checkpoint;  // sealed checkpoints: saves and resumes
  // Rank 0, with a checkpoint key: the master key as read (the one read of the key file in a run), for
  // the freshness record's key; whoever takes it drops it once that is derived.
  std::optional<tee::MasterKey> master;
};

// Collective. Only what is needed is derived and released. `warn` gets the key file's warnings
// (e.g. loose permissions) on rank 0. Throws InputError when rank 0 has no key file.
AtRestKeys release_at_rest_keys(comm::Transport& transport, comm::SessionKeys& keys,
                                const std::string& key_file, bool sealed_data, bool need_ckpt_key,
                                const WarnFn& warn);

}  // namespace tt
