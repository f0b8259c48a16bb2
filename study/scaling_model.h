// The scaling model behind `teetrain model` (a library: study/, tested in tests/study): predicts the step
// time of data-parallel training for a model, P ranks, a bucket size and a TEE variant from a few calibrated
// costs, and checks itself against measured runs (a reproduce directory of --summary JSON).
//
// Per rank and step:   step = compute + tail + exposed
//   compute  = data + ingress + forward + backward + optimizer   (measured; does not depend on P)
//   T_ring   = (alpha * messages + beta * wire_bytes + gamma * crypto_bytes) * oversubscription
//              + transfer * crossings + message * crossings
//              (all buckets of the run's bucket plan; oversubscription = ranks per core of the
//              measuring host, at least 1; transfer = --cc-transfer-us of the run and message = its
//              --host-message-us per crypto core, known costs per crossing, not fitted)
//   exposed  = T_ring                                  (overlap off)
//            = max(T_last, T_ring - backward)           (overlap on: all but the last bucket can
//                                                        hide under backward; T_last = T_ring of the
//                                                        last bucket alone, the embedding's in GPT-2)
// Note [Real bucket plan]: the traffic is that of the buckets a run has (its summary's bucket_bytes,
// from the engine's plan_buckets), not of equal slices: gpt2 at 25 MiB has 6 buckets whose last one
// holds the 147 MiB embedding, and equal slices put 5x too little in the last bucket.
// alpha is the fixed cost of one message (post, match, seal/open set-up): fitted for wall-clock runs
// only. A run in virtual time has no unknown per-message cost (its links have no latency and its
// per-message software cost is the known --host-message-us), so alpha is 0 for it. beta the inverse link
// bandwidth, gamma the inverse crypto bandwidth (seal + open bytes; it absorbs crypto threads and
// pipelining, which is why it is calibrated per TEE variant). Traffic comes from the ring arithmetic
// of docs/design.md §5 (ring_traffic below), not from the counters, because the counters also include the
// start-up broadcast. tail is a per-step constant: what stays exposed however well buckets overlap
// (the end-of-step synchronisation, the loss mean). (alpha, beta, gamma, tail) are
// fitted per variant by non-negative least squares on step - compute, relative to the step time, with
// predict_step's max() resolved by iterating which side each run is on; the TEE variants hold the
// link cost of the `off` runs fixed and their per-message and tail costs at least off's, so a TEE
// variant is never projected faster than `off`.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model.h"

namespace tt::study {

// Per rank, per step, summed over the buckets.
struct RingTraffic {
  double messages = 0;    // messages sent (each segment is a message)
  double wire_bytes = 0;  // bytes sent
  double seal_bytes = 0;  // plaintext bytes sealed (0 with TEE off)
  double open_bytes = 0;  // bytes opened
  double seals = 0;       // seal operations
};

// Ring all-reduce of the buckets `bucket_bytes` (Note [Real bucket plan]) over P ranks.
RingTraffic ring_traffic(int P, const std::vector<double>& bucket_bytes, double segment_bytes, bool tee_on,
                         bool forward_ag);
// The same for `model_bytes` cut into `buckets` equal buckets. Each of a bucket's
// P chunks travels in segments of `segment_bytes` (0: whole chunks). Per bucket and rank: 2(P-1)
// chunk sends of bucket/P bytes; seals 2(P-1) chunks per hop, or P (P-1 scatter-reduce + 1 owner
// seal) with forward-ciphertext all-gather; opens 2(P-1) chunks.
RingTraffic ring_traffic(int P, double model_bytes, int buckets, double segment_bytes, bool tee_on,
                         bool forward_ag);

// Buckets the DDP reducer makes for `model_bytes` with a cap of bucket_mb MiB (first bucket 1 MiB;
// 0 = one bucket). Approximate: parameters are never split, so the real count can differ by one.
int bucket_count(double model_bytes, double bucket_mb);

// One measured run, reduced to what the model needs.
struct RunPoint {
  std::string model;
  std::string variant;  // "off", "cc", "fast", or an ablation label
  int P = 1;
  double bucket_mb = 0;
  int buckets = 1;
  // Bytes of each bucket in launch order (the summary's bucket_bytes); empty: `buckets` equal slices
  // of model_bytes (summaries written before the field). Note [Real bucket plan].
  std::vector<double> bucket_bytes{};
  double model_bytes = 0;
  double segment_bytes = 0;  // 0 when chunks are sealed whole
  bool tee_on = false;
  bool forward_ag = false;
  bool overlap = true;
  double step_s = 0;
  double compute_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;  // of compute_s: the optimizer phase (a sharded stage runs it on 1/P)
  // Note [Stage pricing]: of the parameters, the share inside ZeRO-3's units and the last unit's (a
  // preset's, from the model registry; elsewhere every parameter is in a unit and the last is nothing).
  double unit_share = 1;
  double last_unit_share = 0;
  double seal_s = 0;  // measured seal / open seconds per step (mean over ranks), for the rates
  double open_s = 0;
  // Ranks per core on the measuring host, at least 1 (summary: ranks_per_host / host_cores). The ring's
  // copies and crypto are CPU work: 4 ranks on 2 cores each get half a core, so the ring's cost of
  // such a run is scaled by this factor. Projections assume a rank has its own resources (1), and so
  // does a run in virtual time (its summary's "time": "virtual"), whatever machine computed it.
  double oversubscription = 1;
  // Known emulated cost, not fitted: seconds per H100 CC bounce-buffer crossing, the summary's
  // cc_transfer_us (what the run applied: 0 unless its ring was sealed on the host), charged once per
  // seal and once per open (transfer_seconds below).
  double transfer_s = 0;
  // Known seconds per sealed or opened message of a virtual-time run: the config's host_message_us
  // over its crypto cores (0 unless given).
  double message_s = 0;
  bool virtual_time = false;  // the summary's "time" is "virtual": alpha is not fitted (see above)
  // Plaintext ring messages moved through this host's memory (--link real, the default; real compute
  // always) rather than as emulated-link waits (--link emulate): different link physics, so the two
  // are calibrated separately when a directory holds both.
  bool host_links = true;
};
// From a --summary JSON (optionally with reproduce.py's "variant" field). Throws InputError naming
// the missing field.
RunPoint run_point(const nlohmann::json& summary);

struct Costs {
  double alpha = 0;  // s per message
  double beta = 0;   // s per wire byte
  double gamma = 0;  // s per crypto byte (seal + open)
  double tail = 0;   // s per step exposed whatever the overlap (end-of-step synchronisation, loss mean)
  int points = 0;    // runs it was fitted on
};

// Non-negative least squares of (step - compute) on (messages, wire_bytes, crypto_bytes), each run's
// residual divided by its step time (relative error, as the model is judged). Columns
// that are all zero (crypto with TEE off) get 0. With per-hop sealing the crypto bytes are exactly
// twice the wire bytes, so link and crypto cannot be told apart from step times alone: pass
// fixed_beta >= 0 (the link cost fitted on the TEE-off runs) to fit only alpha and gamma.
// floor, when given, bounds alpha and tail from below (a TEE variant fitted above the `off` costs).
Costs fit_costs(const std::vector<RunPoint>& runs, double fixed_beta = -1, const Costs* floor = nullptr);
double predict_step(const Costs& c, const RunPoint& r);

// Note [Stage pricing]: what the step of each sharding stage costs with a variant's costs, from the same
// ring arithmetic. The ring all-reduce is a reduce-scatter (its first P - 1 hops) and an all-gather (its
// last P - 1): the reduce-scatter is priced as half of the ring with every hop sealed, the all-gather as
// the rest of ring_seconds (the same messages and bytes; with a forward-ciphertext all-gather, fast's,
// one seal per chunk and so fewer crossings than the reduce-scatter's). DDP: predict_step. ZeRO-1/2 move
// the same two halves, but the all-gather carries the updated parameters after the optimizer, so it hides
// behind nothing: reduce-scatter exposed as DDP's all-reduce is (past backward, or its last bucket), plus
// the whole all-gather. ZeRO-3 gathers every unit's parameters in forward (prefetched: hidden behind the
// forward compute, where it fits) and again in backward, where that all-gather and the reduce-scatter
// share the link behind backward. Only the units are gathered so (unit_share of the all-gather), and the
// last unit's forward gather serves its backward too (last_unit_share less in backward); what lies
// outside every unit (embeddings, final norm, head) is gathered once, after the optimizer, exposed, as at
// ZeRO-1/2 (Note [ZeRO-3 units follow the buckets], engine/gradients/ddp_reducer.h). Every sharded stage
// runs the optimizer on 1/P of the parameters (optimizer_s / P of the measured DDP run's). Not priced:
// the gradient norm's P - 1 small messages, and that buckets, not units, are gathered (a bucket that
// straddles a unit's edge and the embeddings is gathered as they are).
enum class ShardPrice { Ddp, Zero12, Zero3 };
struct ShardPriceName {
  ShardPrice stage;
  const char* name;
};
inline constexpr ShardPriceName kShardPrices[] = {
    {ShardPrice::Ddp, "DDP"}, {ShardPrice::Zero12, "ZeRO-1/2"}, {ShardPrice::Zero3, "ZeRO-3"}};
double predict_stage_step(const Costs& c, const RunPoint& r, ShardPrice stage);
RingTraffic traffic_of(const RunPoint& r);
// Seconds per step of the run's known costs per crossing ((transfer_s + message_s) x (seals + opens)).
double transfer_seconds(const RunPoint& r);
// The bucket sizes a run's traffic is computed from: bucket_bytes, else equal slices.
std::vector<double> bucket_plan(const RunPoint& r);
// The run reduced to its last bucket (what overlap leaves exposed).
RunPoint last_bucket(const RunPoint& r);

// The whole command: reads runs, fits, compares, projects. Returns the report as JSON (the CLI prints
// it as tables: tools/cli/cmd_model.cpp): "costs" per variant (with "tee_on"), "points" (measured vs
// predicted), "mean_abs_error", "projection" {model, bucket_mb, overlap, compute_s, compute_P,
// variants, rows}.
struct ModelQuery {
  std::string runs;       // reproduce directory (runs.jsonl) or a .jsonl / .json file
  std::string model;      // project this model (default: the largest measured one)
  double bucket_mb = 25;  // bucket size of the projection
  bool overlap = true;
  std::vector<std::string> variants;  // default: every variant measured
  std::vector<int> ranks{8, 16, 32, 64, 128, 256, 512, 1024};
  // Fit only on runs with P <= fit_max_p (0: every run); the others are held out and their error is
  // reported apart ("held_out" in "points", "fit_error" and "held_out_error": mean and max |error|).
  int fit_max_p = 0;
};
nlohmann::json run_scaling_model(const ModelQuery& q);
std::vector<nlohmann::json> load_runs(const std::string& path);

}  // namespace tt::study
