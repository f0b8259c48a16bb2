#include "engine/input/token_source.h"

#include "base/error.h"
#include "engine/input/mlm_masking.h"

namespace tt {

DataSource open_token_data(const TokenSourceOptions& o, const TeeSwitches& ts,
                           const tee::DatasetKey* dataset_key, int rank, Profiler& profiler) {
  DataSource d;
  if (dataset_key != nullptr) {
    const IngressOptions ing{ts.direct_ingress ? IngressMode::Direct : IngressMode::Bounce, ts.cipher,
                             static_cast<uint32_t>(rank), o.ingress_gbps};
    d.sealed_train = std::make_unique<SealedTokenDataset>(
        SealedTokenDataset::open(o.data, "train", *dataset_key, &profiler));
    d.sealed_train_loader =
        std::make_unique<SealedTokenLoader>(*d.sealed_train, o.seq, o.seed, true, ing, &profiler);
    d.train = [&l = *d.sealed_train_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
    // The validation split must be of the training split's dataset (one seal-data run), and present
    // when that dataset has one: data/dataset_binding.h.
    d.sealed_val =
        SealedTokenDataset::open_other_split(o.data, "val", *d.sealed_train, *dataset_key, &profiler);
    if (d.sealed_val) {
      d.sealed_val_loader =
          std::make_unique<SealedTokenLoader>(*d.sealed_val, o.seq, o.seed, false, ing, &profiler);
      d.val = [&l = *d.sealed_val_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
    }
    d.describe = d.sealed_train->describe() + (ts.direct_ingress ? ", direct ingress" : ", bounce ingress");
    d.vocab = d.sealed_train->vocab();
  } else {
    d.plain_train = std::make_unique<TokenDataset>(TokenDataset::open(o.data, "train"));
    d.plain_train_loader = std::make_unique<TokenLoader>(*d.plain_train, o.seq, o.seed, true);
    d.train = [&l = *d.plain_train_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
    try {
      d.plain_val = std::make_unique<TokenDataset>(TokenDataset::open(o.data, "val"));
      d.plain_val_loader = std::make_unique<TokenLoader>(*d.plain_val, o.seq, o.seed, false);
      d.val = [&l = *d.plain_val_loader](Batch& b, uint64_t g, int n) { l.fill(b, g, n); };
    } catch (const InputError&) {
    }
    d.describe = d.plain_train->describe();
    d.vocab = d.plain_train->vocab();
  }
  // A masked LM keeps its last id for [MASK], so the data must fit below it.
  const int vocab = o.masked_lm ? o.model_vocab - 1 : o.model_vocab;
  if (d.vocab > vocab) {
    throw InputError("--data " + o.data + " holds vocabulary " + std::to_string(d.vocab) +
                     " but the model's is " + std::to_string(vocab) + (o.masked_lm ? " (plus [MASK])" : "") +
                     "; use --vocab " + std::to_string(o.masked_lm ? d.vocab + 1 : d.vocab));
  }
  if (o.masked_lm) {
    const MlmMasking mlm{o.seed, o.model_vocab - 1, d.vocab};
    d.train = mlm.wrap(std::move(d.train));
    if (d.val) d.val = mlm.wrap(std::move(d.val));
    d.describe += ", masked LM (15% of positions)";
  }
  return d;
}

}  // namespace tt
