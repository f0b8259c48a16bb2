// The training data of a text model: plain token shards, or sealed shards opened inside the rank
// with the released dataset key (TEE mode: direct or H100-style bounce ingress). Image models build
// the same DataSource from data/ image sources.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/profiler.h"
#include "data/sealed_tokens.h"
#include "data/token_loader.h"
#include "engine/run_choices.h"
#include "engine/trainer.h"
#include "tee/crypto/purpose_keys.h"
#include "tee/secure_bytes.h"

namespace tt {

// What the trainer reads: batch functions over loaders this object owns.
struct DataSource {
  std::unique_ptr<TokenDataset> plain_train, plain_val;
  std::unique_ptr<SealedTokenDataset> sealed_train, sealed_val;
  std::unique_ptr<TokenLoader> plain_train_loader, plain_val_loader;
  std::unique_ptr<SealedTokenLoader> sealed_train_loader, sealed_val_loader;
  BatchFn train, val;  // val is empty when the data has no validation split
  std::string describe;
  int vocab = 0;
};

struct TokenSourceOptions {
  std::string data;  // --data: a prefix, directory, file or glob of shards
  int seq = 0;
  std::uint64_t seed = 0;
  double ingress_gbps = 0;  // cap on sealed ingress (0: none)
  int model_vocab = 0;      // the data's vocabulary must fit in it
  bool masked_lm = false;   // BERT: mask the windows (engine/input/mlm_masking.h); [MASK] is model_vocab - 1
};

// dataset_key null: plain shards. Throws InputError naming --data when the shards are missing,
// malformed or of a larger vocabulary than the model's; IntegrityError for sealed shards that fail.
DataSource open_token_data(const TokenSourceOptions& o, const TeeSwitches& ts,
                           const tee::DatasetKey* dataset_key, int rank, Profiler& profiler);

}  // namespace tt
