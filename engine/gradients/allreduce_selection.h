// Which all-reduce algorithm each gradient bucket takes (`--allreduce-algo auto|ring|rd|rhd`), and the
// cost model behind `auto` (comm/allreduce/allreduce_cost.h): its coefficients from a calibration file that
// `teetrain bench allreduce --calibrate FILE` writes, or from defaults for the TEE mode and platform.
//
// Note [same algorithm on every rank]: a bucket's algorithm is a function of the request, the model's
// coefficients, P, the bucket's size and the segment size — all of them agreed before the first
// gradient moves (the run's configuration, coefficients included, is compared across ranks at start-up)
// and never a rank's own timing. Ranks that chose differently would post mismatched messages.
//
// The default is `ring`: rd and rhd sum in another order than the ring (docs/design.md §5), so `auto`
// would change the parameters' bits of existing runs whenever it picks them at P >= 3, and, since its
// pick depends on the TEE mode's costs, make --tee off and cc differ. With a fixed algorithm every
// TEE mode gives the same bits.
#pragma once
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>

#include "comm/allreduce/allreduce_algo.h"
#include "comm/allreduce/allreduce_cost.h"
#include "core/emulated/emulated_gpu.h"
#include "engine/gradients/segments.h"
#include "engine/run_choices.h"
#include "platform/emulated/virtual_seal_channel.h"

namespace tt {

struct CostModelSource {
  comm::CostModel model;
  std::string source;  // "defaults for tee cc (...)", "calibration runs/cost.json (tee cc)", ...
};

// What sealing one rank's ring messages costs on the emulated platform in virtual time: the modelled
// host's AES-GCM (--host-aead-gbps, --host-crypto-cores, --host-message-us, --bounce-reencrypt), or the
// emulated GPU's with device crypto. The one source of the sealing channel's charges and of the cost
// model `auto` chooses by, so that what auto predicts is what the run then books.
platform::CryptoCostModel modelled_crypto(const HostModel& host, const TeeSwitches& ts,
                                          const EmulatedGpu& gpu);

// The model for a TEE mode without a calibration: this class of machine's shared-memory link (or
// --link-gbps), the CPU's AES-GCM per sealing thread, --cc-transfer-us per crossing; an emulated GPU
// (`gpu`, null otherwise) brings its NVLink (--link emulate), HBM and AES-GCM rates, and in virtual time
// the modelled host's sealing (modelled_crypto). `link`: what the ranks agreed of their MPI link
// (engine/gradients/segments.h: agreed_link): its eager limit, header included (0: Open MPI's
// shared-memory default), and whether rendezvous exchanges take turns on it (TCP between hosts).
CostModelSource default_cost_model(const ParallelOptions& parallel, const ComputeOptions& compute,
                                   const TeeSwitches& ts, const EmulatedGpu* gpu, const LinkFacts& link = {});

// auto's model for a run: the plan's --allreduce-cost FILE (its model for the TEE mode), else the defaults
// for the mode and platform. `train`'s host path and `bench allreduce` both take it from here.
CostModelSource cost_model_for(const ParallelOptions& parallel, const ComputeOptions& compute,
                               const TeeSwitches& ts, const EmulatedGpu* gpu, const LinkFacts& link = {});

// The calibration file: {"format": "teetrain-allreduce-cost-v1", "models": {"off": {...}, "cc": ...}}.
// Reads the model of `mode`; InputError (naming the file and the command that writes it) when the
// file is unreadable, malformed or has no model for the mode. What the model leaves out comes from
// `link`: its eager limit (without `eager_bytes`; no extra cost per rendezvous then) and whether
// exchanges take turns (without `rendezvous_turns`).
CostModelSource load_cost_model(const std::string& path, TeeMode mode, const LinkFacts& link = {});
// Adds (or replaces) `mode`'s model in the file, creating it; `about` records how it was measured.
void save_cost_model(const std::string& path, TeeMode mode, const comm::CostFit& fit,
                     const nlohmann::json& about);
nlohmann::json cost_model_json(const comm::CostModel& m);

// Per bucket: the algorithm and its segments, remembered the first time the bucket is seen (bucket
// sizes are fixed for a run), and what the model predicted for each algorithm. A fixed request runs
// at the run's segments; auto may cut a small bucket's messages to the transport's eager limit
// (comm/allreduce/allreduce_cost.h). `split` (--shard): the bucket runs as a reduce-scatter and an
// all-gather apart, each algorithm's in the ring's shard layout (Note [Shard handover],
// comm/allreduce/shard_handover.h), so every algorithm is priced as its two halves (allreduce_work's
// split) and auto picks ring, rhd or hier per bucket (rd's halves are rhd's).
// The choices a selection has priced, each bucket size once: pricing a size costs O(P^2) hops at P ranks
// (allreduce_work walks every rank's), 1,024 included. One run's ranks that share a process share one
// (virtual ranks: RunServices::prices): by Note [same algorithm on every rank] each of them prices a size
// with the same request, model and inputs, so the first rank to ask prices it and the others take its
// answer (at P = 1,024 that pricing was most of a folded ring's run time). Keyed by what may vary
// between selections of one run: the ranks, the count, the segments, the wire overhead and the split.
class AlgoPrices {
 public:
  using Key = std::tuple<int, std::size_t, std::size_t, std::size_t, bool>;
  // The choice for `key`, computed by `price` once (other callers wait for it). Thread-safe.
  template <typename Fn>
  comm::AlgoChoice get(const Key& key, Fn&& price) {
    std::unique_lock lock(mu_);
    if (auto it = done_.find(key); it != done_.end()) {
      const std::shared_future<comm::AlgoChoice> f = it->second;
      lock.unlock();
      return f.get();
    }
    std::promise<comm::AlgoChoice> mine;
    const std::shared_future<comm::AlgoChoice> f = mine.get_future().share();
    done_.emplace(key, f);
    lock.unlock();
    try {
      mine.set_value(price());
    } catch (...) {
      mine.set_exception(std::current_exception());  // get() rethrows it here and to every waiter
    }
    return f.get();
  }

 private:
  std::mutex mu_;
  std::map<Key, std::shared_future<comm::AlgoChoice>> done_;
};

class AlgoSelection {
 public:
  // overhead: the channel's wire bytes per message beyond the payload (header and tag when sealed).
  // prices: shared with the run's other ranks in this process (null: this selection's own).
  AlgoSelection(std::optional<comm::ReduceAlgo> request, CostModelSource model, int ranks,
                std::size_t segment_bytes, std::size_t overhead = 0, bool split = false,
                std::shared_ptr<AlgoPrices> prices = nullptr);
  // What runs for the bucket: algo and segment_bytes (predicted_us: the model's view of each algorithm).
  const comm::AlgoChoice& choice(int bucket, std::size_t count);
  comm::ReduceAlgo pick(int bucket, std::size_t count) { return choice(bucket, count).algo; }
  // The model's time for what pick(bucket, count) runs, in microseconds.
  double predicted_us(int bucket, std::size_t count);
  const std::optional<comm::ReduceAlgo>& request() const { return request_; }
  // "auto (cost model: ring, rd or rhd per bucket)", or the fixed algorithm's title.
  std::string describe() const;
  // {"requested", "model": {coefficients, "source"}, "counts": {"ring": n, ...}, "buckets": [...]}.
  nlohmann::json summary() const;

 private:
  // The choice for `count` floats: auto's cheapest, or the requested algorithm at the run's segments.
  comm::AlgoChoice price(std::size_t count) const;
  struct Pick {
    std::size_t bytes = 0;
    comm::AlgoChoice choice;
  };
  std::optional<comm::ReduceAlgo> request_;  // none: auto
  CostModelSource model_;
  int ranks_;
  std::size_t segment_bytes_;
  std::size_t overhead_;
  bool split_;
  std::map<int, Pick> buckets_;
  // A choice is a function of the count alone (the rest is fixed for a run), priced once (AlgoPrices).
  std::shared_ptr<AlgoPrices> prices_;
};

}  // namespace tt
