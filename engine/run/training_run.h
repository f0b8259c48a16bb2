// One rank's training run, put together by the engine from a TrainOptions, resolved once into its
// immutable plan (engine/run/run_plan.h): links and keys (TEE session, attestation, keys at rest), data
// (tokens or images, plain or sealed), backend, model (by name, from models/model_registry.h),
// optimizer, checkpoints (resume, freshness), and the gradient path and DDP reducer the plan chooses.
// `teetrain train` parses into TrainOptions, builds one of these, runs it and prints what describe(),
// finish() and summary() return.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "comm/channel.h"
#include "comm/transport/mpi_transport.h"
#include "comm/transport/shared_buffer.h"
#include "core/backend.h"
#include "core/emulated/virtual_clock.h"
#include "core/profiler.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/freshness.h"
#include "engine/gradients/ddp_reducer.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/input/image_source.h"
#include "engine/input/token_source.h"
#include "engine/keys/at_rest_keys.h"
#include "engine/keys/attestation_record.h"
#include "engine/keys/tee_session.h"
#include "engine/optimizer.h"
#include "engine/run/dist_context.h"
#include "engine/run/input_agreement.h"
#include "engine/run/rank_links.h"
#include "engine/run/run_plan.h"
#include "engine/run/run_services.h"
#include "engine/run/startup_watchdog.h"
#include "engine/state_memory.h"
#include "engine/trainer.h"
#include "platform/platform.h"

namespace tt {

// The facts of a run, gathered once when it is built: the banner shows them (rank 0 prints
// describe()) and the summary records them, so the two never disagree.
struct RunDescription {
  std::string model;
  std::size_t params = 0;
  double memory_gib = 0;        // per rank: TrainingRun::memory_gib()
  double memory_state_gib = 0;  // its part that does not grow with the batch
  std::string memory;           // what memory_gib is made of, and the emulated GPU's memory it fits in
  int world = 1;                // the ranks the run models (ranks_run, or --model-ranks when folded)
  int ranks_run = 1;            // the ranks that ran
  std::string fold;             // what a folded ring models (Note [Folded ring]); empty: no fold
  int threads = 1;
  std::string tee;  // "tee off", or the mode and its switches
  std::size_t buckets = 0;
  std::string data, backend;
  // What several ranks' runs only have (empty, nullopt or null with one rank: nothing is reduced).
  std::string gradients;               // the gradient path; "not reduced (one rank)"
  std::optional<SegmentPick> segment;  // the segments as cut and why (nullopt: the path cuts none of ours)
  std::string host_transport;          // how the ranks of this host talk
  std::string grad_memory;             // where the gradients live and why
  std::string shard;                   // --shard and what this rank keeps (empty: not sharded)
  double cc_transfer_us = 0;           // --cc-transfer-us as applied to the host path
  std::string attestation;             // empty with TEE off
  nlohmann::json attestation_summary;  // the summary's "attestation" (null with TEE off)
  std::string agreed_inputs;           // what every rank opened and agreed on (InputRecord::describe)
  // A TEE run of one rank (no mpirun, or -np 1) has no link to seal: what it protects and how to train
  // several ranks instead; empty otherwise.
  std::string single_rank_note;
  // What the run gave up, each by the flag that gave it up ("--attestation none", "--allow-plain-data",
  // "--no-revocation-check", "--adversary flip"): the banner, the result line and the summary name them.
  std::vector<std::string> opt_outs;
  bool unauthenticated = false;  // nothing authenticated the peers, or revocation was not checked: repeat
                                 // the banner at the end
  bool images = false;           // rates are images/s, else tokens/s
  bool reduced = false;          // several ranks sum their gradients (RunPlan::reduced)
};

// What finish() gathers.
struct RunReport {
  nlohmann::json phases;       // {"phases": {...}, "counters": {...}}: see gather_phase_report
  std::string adversary_view;  // the teaching adversary's report (empty without --adversary)
  int trace_parts = 0;         // rank 0: parts merged into --trace
};

// Collective: every rank must call it. Returns the "phases" (mean per step; max and mean over ranks)
// and "counters" (per rank) objects.
nlohmann::json gather_phase_report(DistContext& dist, const Profiler& profiler, long steps);
// Seconds per step of the phases the training thread runs one after another (data, ingress, forward,
// backward, exposed communication, optimizer, checkpoint, validation, bookkeeping; mean over ranks):
// what should add up to the step time. Seal, open, reduce and stage run on other threads and overlap
// these.
double main_thread_seconds(const nlohmann::json& report);

// One rank's training run, assembled stage by stage. Members are declared in the order the stages
// build them, so they are destroyed in reverse: the reducer's communication thread stops before the
// channel and the transport it uses go away, and the profiler outlives everything that records.
class TrainingRun {
 public:
  // Builds every stage; throws InputError (exit 2) for conflicting options or bad input,
  // IntegrityError (exit 3) when a peer, the data or a checkpoint fails its checks. Its services'
  // watchdog, where given, is told each start-up stage (Note [Start-up watchdog],
  // engine/run/startup_watchdog.h) and stands down once the run is built; its notices are armed with
  // the session's key once it exists (Note [Sealed notices], comm/secure/first_failure.h).
  explicit TrainingRun(const TrainOptions& opts, RunServices services = {});
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  TrainResult run();
  // Collective (every rank calls it): the phase report averaged over ranks, the adversary's view, and
  // the merged trace (--trace).
  RunReport finish(const TrainResult& r);

  // What a front end shows and records (rank 0 prints them).
  const RunDescription& describe() const { return facts_; }
  nlohmann::json summary(const TrainResult& r, const RunReport& report) const;
  int rank() const { return rank_; }
  const RunPlan& plan() const { return plan_; }  // as resolved: --epochs as steps, image shapes

 private:
  // What one rank's device holds, GiB: FP32 parameters, gradients and two optimizer moments (16 bytes a
  // parameter, less as --shard divides them), the activations of one batch and ZeRO-3's gathered units;
  // an emulated BF16 run keeps a BF16 copy of the weights too (2 bytes) and its activations in 2-byte
  // elements (half), as mixed-precision training does (engine/state_memory.h).
  double memory_gib() const;
  std::string memory_description() const;
  void check_device_memory() const;  // an emulated GPU too small for it refuses the run (exit 2)
  std::string shard_description() const;
  bool sharded() const { return !shard_.empty(); }
  std::unique_ptr<Optimizer> gather_optimizer(long step);
  bool shard_saves() const;
  bool param_shard_saves() const;
  std::optional<ShardedSave> save_shards(long step);
  void gather_resumed_params();
  StateBytes state_bytes() const;              // per rank, as --shard leaves it
  nlohmann::json grads_resident_peak() const;  // measured (DdpReducer::peak_grad_resident_bytes) or null
  StateBytes state_bytes(ShardStage stage) const;
  double memory_state_gib() const;  // the per-parameter part alone
  bool bf16_emulated() const;
  void start_links();
  void open_data();
  void build_model();
  int run_threads(int requested);
  void setup_checkpoints();
  void restore_or_broadcast();
  void agree_on_inputs();
  void build_reducer();
  std::string place_grads();
  RunDescription gather_facts() const;

  StartupWatchdog* watchdog_;           // may be null
  comm::FailureNotices* notices_;       // main's (null: none): armed when the session's keys exist
  comm::Transport* seat_;               // a virtual rank's transport (null: this process is one rank)
  int seat_ranks_on_host_;              // with seat_: the ranks its host holds
  std::shared_ptr<AlgoPrices> prices_;  // the run's virtual ranks' shared pricing (null: this rank's own)
  VirtualClock virtual_clock_;          // the profiler's clock when the plan is in virtual time
  Profiler profiler_;
  // An image set opens before the plan: its shape and classes are the model's (engine/run/run_plan.h).
  std::optional<ImageSource> img_;
  const RunPlan plan_;
  // Every message between ranks goes through links_->transport() and links_->channel() (sealed in TEE
  // mode once start_links() has run).
  std::optional<RankLinks> links_;
  int rank_ = 0;
  int world_ = 1;  // the ranks that run
  // The ranks the run models: world_, or --model-ranks when a fold models a larger ring (Note [Folded
  // ring], comm/allreduce/ring_geometry.h); the averaging, the memory and the report are its.
  int modelled_world() const { return plan_.parallel().modelled_world(world_); }
  std::optional<DistContext> dist_;
  std::optional<AttestationRecord> attestation_record_;  // real evidence: every rank's, once agreed
  AtRestKeys at_rest_;
  InputRecord inputs_;  // what this rank opened, filled stage by stage; once agreed, every rank's
  DataSource data_;
  int threads_ = 1;
  int ranks_per_host_ = 1;
  std::unique_ptr<platform::Platform> platform_;  // chosen once from the plan: owns the backend
  Backend* backend_ = nullptr;                    // platform_->backend()
  // The gradient arena where it is shared (place_grads, Note [Shared buffers] in
  // comm/transport/shm_transport.h): declared before model_, which uses it, and after links_, whose transport
  // it is shared with.
  std::optional<comm::SharedBuffer> grad_buffer_;
  // Or, where a stage shards the gradients on host memory, a mapping whose pages outside this rank's
  // shard are released (Note [Released gradient pages], base/host_memory.h); also before model_.
  std::optional<ReleasableHostBuffer> grad_release_;
  // With it, where released pages wait for the next range written (Note [Pooled pages]); the reducer
  // uses it, so it is declared before reducer_.
  std::optional<PagePool> page_pool_;
  static constexpr std::size_t kPoolUnits = 2;  // its capacity, in the largest unit's bytes (ZeRO-3 only)
  std::optional<comm::ScopedShare> grad_share_;
  std::string grad_memory_;  // where the gradients are and why (the banner, the summary)
  std::unique_ptr<Model> model_;
  TrainConfig tc_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<FileCodec> codec_;
  std::optional<FreshnessRecord> freshness_;
  std::unique_ptr<CheckpointStore> store_;
  long start_step_ = 0;
  uint64_t samples_ = 0;
  bool resumed_param_shard_ = false;    // resumed from this rank's parameter shard alone: gather the rest
  std::string resumed_params_sha256_;   // state.json's, which the gathered parameters must hash to
  std::unique_ptr<GradientPath> path_;  // the plan's, built on every rank count
  std::vector<Bucket> buckets_;
  std::vector<ParamRange> shard_;        // this rank's (Note [Shard layout]); empty: not sharded
  std::unique_ptr<DdpReducer> reducer_;  // several ranks only
  RunDescription facts_;                 // gathered once the run is built
};

}  // namespace tt
