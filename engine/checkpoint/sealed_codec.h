// The FileCodec that makes checkpoints sealed (docs/design.md §2 "checkpoint" crossing, §7 format):
// every checkpoint file is written as a sealed file under the checkpoint key
// (engine/keys/key_file.h: derive_checkpoint_key), with ".sealed" appended to its name and clear
// metadata {"kind":"<model|optimizer|state|manifest>","name":"<file name>"} (authenticated with
// the chunks: a verified read checks that "name" is the file's own name), plus "step":N for a rank's
// optimizer shard (the name says the rank; a verified read checks the step is the manifest's).
//
// With CheckpointStore this gives sealed checkpoints with the store's crash safety: each file is
// written to a temporary name, fsynced and renamed (SealedFileWriter), inside a step directory
// that is itself only renamed into place once complete.
#pragma once
#include <memory>

#include "engine/checkpoint/checkpoint.h"
#include "tee/crypto/aead.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/crypto/sealed_file.h"
#include "tee/secure_bytes.h"

namespace tt {

inline constexpr const char* kSealedCodecSuffix = ".sealed";

// The codec keeps its own copy of the key (wiped when the codec is destroyed) and hands it to the
// verified read path (open_verified_checkpoint), which throws IntegrityError naming the file
// and chunk if any chunk fails to open (tampered, truncated, reordered) or the key is wrong.
std::unique_ptr<FileCodec> make_sealed_codec(const tee::CheckpointKey& checkpoint_key,
                                             tee::Cipher cipher = tee::Cipher::Aes256Gcm,
                                             std::uint32_t chunk_size = tee::kDefaultSealChunkSize);

}  // namespace tt
