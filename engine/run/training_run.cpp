#include "engine/run/training_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "base/warning.h"
#include "comm/secure/secure_session.h"
#include "engine/checkpoint/sealed_codec.h"
#include "engine/gradients/shard.h"
#include "engine/keys/attestation_record.h"
#include "engine/keys/key_file.h"
#include "engine/param_chunks.h"
#include "engine/run/host_layout.h"
#include "engine/run/platform_profile.h"
#include "engine/run/trace_writer.h"
#include "engine/state_memory.h"
#include "models/model_registry.h"
#include "platform/platform.h"

namespace tt {
namespace {

// The banner's TEE field: the mode and the switches it resolved to.
std::string tee_label(const TeeOptions& o, const TeeSwitches& ts) {
  if (!ts.on) return "tee off";
  return std::string("tee ") + name(o.settings.mode) + " (" + enum_name(ts.cipher) + ", pipeline " +
         (ts.pipeline ? "on" : "off") + ", forward-ag " + (ts.forward_ag ? "on" : "off") +
         ", crypto threads " + std::to_string(ts.crypto_threads) + ", ingress " +
         (ts.direct_ingress ? "direct" : "bounce") +
         (ts.device_crypto ? ", gradients sealed on the GPU" : "") + ")";
}

// Every collateral file the verifier read, as the agreed inputs hold it (Note [Collateral in the agreed
// inputs]): [{"kind": "TCB info", "file": .., "sha256": ..}, ..].
nlohmann::json collateral_json(const std::vector<comm::CollateralDigest>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const comm::CollateralDigest& f : files)
    out.push_back({{"kind", f.kind}, {"file", f.file}, {"sha256", f.sha256}});
  return out;
}

// The summary's "attestation" object (null with TEE off): how the peers were authenticated, whether
// revoked devices were refused, and a warning when either is not so.
nlohmann::json attestation_json(const std::optional<comm::AttestConfig>& attest,
                                const std::optional<AttestationRecord>& record, int world) {
  if (!attest) return nullptr;
  const AttestationSummary s = attestation_summary(*attest, world);
  nlohmann::json j = {
      {"mode", s.mode}, {"authenticated", s.authenticated}, {"revocation_checked", s.revocation_checked}};
  // The list the run checked against: which one (its number) and until when it was current.
  j["revocation_list"] = s.revocation_list ? nlohmann::json{{"number", s.revocation_list->number},
                                                            {"numbered", s.revocation_list->numbered},
                                                            {"next_update", s.revocation_list->next_update},
                                                            {"expired", s.revocation_list->expired}}
                                           : nlohmann::json(nullptr);
  if (!s.warning.empty()) j["warning"] = s.warning;
  if (!s.evidence.empty()) {
    // Real evidence: what verified it, and every rank's measurements as its neighbours verified them
    // (Note [Attestation record]).
    const comm::RealVerifierFacts facts = attest->real->verifier->facts();
    j["evidence"] = {{"kind", attest->real->kind.name},
                     {"verifier", s.evidence},
                     {"test_roots", facts.test_roots},
                     {"policy_sha256", facts.policy_digest.empty() ? nlohmann::json(nullptr)
                                                                   : nlohmann::json(facts.policy_digest)},
                     {"revocation_lists", facts.crls},
                     {"collateral", collateral_json(facts.collateral)},
                     {"record_sha256", record ? nlohmann::json(record->sha256) : nlohmann::json(nullptr)},
                     {"ranks", record ? record->to_json() : nlohmann::json::array()}};
  }
  return j;
}

// Each protection the run gave up, by its flag (RunDescription::opt_outs). `plain_data`: a TEE run
// on plaintext data, which only --allow-plain-data lets through.
std::vector<std::string> opt_outs(const TeeOptions& tee, const std::optional<comm::AttestConfig>& attest,
                                  bool plain_data, int world) {
  std::vector<std::string> out;
  if (attest && world > 1 && attest->mode == comm::AttestationMode::None)
    out.emplace_back("--attestation none");
  if (attest && attest->anchor != nullptr && !attest->anchor->checks_revocation())
    out.emplace_back("--no-revocation-check");
  if (attest && attest->anchor != nullptr && attest->anchor->stale_crl() == tee::StaleCrl::Accept)
    out.emplace_back("--allow-expired-crl");
  if (attest && attest->real && attest->real->verifier->facts().test_roots)
    out.emplace_back("--allow-test-roots");
  if (plain_data) out.emplace_back("--allow-plain-data");
  if (tee.adversary) out.push_back(std::string("--adversary ") + comm::attack_name(tee.adversary->kind));
  return out;
}

// What the trainer measured, as the summary's first fields.
nlohmann::json result_json(const TrainResult& r, bool images) {
  return {{"steps", r.steps},
          {"final_loss", r.final_loss},
          {"val_loss", r.val_loss},
          {"val_accuracy", r.val_accuracy},
          {images ? "images_per_s" : "tokens_per_s", r.items_per_s},
          {"items_per_s", r.items_per_s},
          {"items", images ? "images" : "tokens"},
          {"step_s_mean", r.step_seconds_mean},
          {"time", r.virtual_time ? "virtual" : "wall"},  // virtual: computed (docs/design.md §11)
          {"timed_steps", r.timed_steps},
          {"train_seconds", r.seconds},
          {"params_sha256", r.params_sha256}};
}

}  // namespace

nlohmann::json gather_phase_report(DistContext& dist, const Profiler& profiler, long steps) {
  const auto totals = profiler.phase_totals();
  std::vector<double> per_step(totals.begin(), totals.end());
  for (double& v : per_step) v /= static_cast<double>(std::max(1L, steps));
  // The trainer times the whole batch fetch as data; sealed loaders also time their ingress part
  // (opening, bounce path), so data is reported net of it and the phases still add up.
  auto& data = per_step[static_cast<std::size_t>(Phase::Data)];
  data = std::max(0.0, data - per_step[static_cast<std::size_t>(Phase::Ingress)]);
  const auto [mx, mean] = dist.max_and_mean(per_step);
  nlohmann::json phases = nlohmann::json::object();
  for (int i = 0; i < Profiler::kPhases; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    phases[std::string(phase_name(static_cast<Phase>(i)))] = {{"max", mx[idx]}, {"mean", mean[idx]}};
  }
  const auto counts = profiler.counter_totals();
  nlohmann::json counters = nlohmann::json::object();
  for (int i = 0; i < Profiler::kCounters; ++i) {
    counters[std::string(counter_name(static_cast<Counter>(i)))] =
        dist.gather(counts[static_cast<std::size_t>(i)]);
  }
  return {{"phases", phases}, {"counters", counters}};
}

double main_thread_seconds(const nlohmann::json& report) {
  double s = 0;
  for (const Phase p : {Phase::Data, Phase::Ingress, Phase::Forward, Phase::Backward, Phase::CommExposed,
                        Phase::Optimizer, Phase::Checkpoint, Phase::Validation, Phase::Bookkeeping}) {
    s += report["phases"][std::string(phase_name(p))]["mean"].get<double>();
  }
  return s;
}

namespace {

// An image model's data opens first: its shape and classes complete the plan (engine/run/run_plan.h).
// The options are checked before (every conflict, exit 2): a bad flag never waits on reading a dataset.
// Plain images in TEE mode are refused only once the ranks agree on what their disks hold (start_links).
std::optional<ImageSource> open_images(const TrainOptions& o, ImageSetCache* cache) {
  validate(o);
  if (!is_image_model(o.model)) return std::nullopt;
  return open_image_source({o.data.path, o.schedule.seed, /*augment=*/false,
                            o.tee.settings.mode != TeeMode::Off, /*allow_plain_data=*/true},
                           cache);
}

// The run's ranks: the virtual ranks' world (Note [Virtual ranks]), or MPI_COMM_WORLD's processes.
int world_size(const RunServices& services) {
  if (services.seat != nullptr) return services.seat->size();
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  return world;
}

}  // namespace

// Note [Start-up watchdog]: each stage that waits for the other ranks is entered before it starts;
// this rank's own work between them (data, model, checkpoint) is not bounded.
TrainingRun::TrainingRun(const TrainOptions& opts, RunServices services)
    : watchdog_(services.watchdog),
      notices_(services.notices),
      seat_(services.seat),
      seat_ranks_on_host_(services.ranks_on_host),
      prices_(services.prices),
      profiler_(/*trace=*/!opts.output.trace.empty()),
      img_(open_images(opts, services.images.get())),
      plan_(opts, img_ ? &*img_ : nullptr,
            world_size(services)) {  // every conflicting choice at once (exit 2)
  if (plan_.compute().virtual_time()) profiler_.use_clock(virtual_clock_);
  const ParallelOptions& par = plan_.parallel();
  const std::chrono::milliseconds timeout(static_cast<long>(par.timeout_s * 1000.0));
  if (watchdog_ != nullptr) watchdog_->set_timeout(timeout);
  enter_stage(watchdog_, StartupStage::Links);
  if (seat_ != nullptr)
    links_.emplace(*seat_, timeout, par.wait, plan_.tee().adversary, plan_.switches().on);
  else
    links_.emplace(MPI_COMM_WORLD, timeout, par.wait, par.host_transport, plan_.tee().adversary,
                   plan_.switches().on);
  rank_ = links_->rank();
  world_ = links_->size();
  links_->wire().route_through(par.algo, plan_.compute().gpu.topology.gpus_per_node,
                               par.shard != ShardStage::None);
  if (links_->wire().active() && rank_ == 0) std::fprintf(stderr, "%s\n", links_->wire().banner().c_str());
  start_links();
  enter_stage(watchdog_, StartupStage::OwnWork);
  open_data();
  build_model();
  setup_checkpoints();
  restore_or_broadcast();
  enter_stage(watchdog_, StartupStage::InputAgreement);
  agree_on_inputs();
  enter_stage(watchdog_, StartupStage::Links);
  build_reducer();
  gather_resumed_params();
  facts_ = gather_facts();
  enter_stage(watchdog_, StartupStage::Running);
}

// In TEE mode: attest the ring neighbours, agree keys, and build the one sealed channel that carries
// every message between ranks from then on (gradients, broadcasts, agreement, replica checks); then
// check every rank runs this configuration with the same trust root and policy, and that every
// setting deciding the messages to come is the same on every rank (Note [Agreed inputs], round one),
// and release the keys at rest.
void TrainingRun::start_links() {
  comm::Transport& transport = links_->transport();
  const TeeOptions& tee = plan_.tee();
  const TeeSwitches& ts = plan_.switches();
  const std::string config = plan_.json().dump();
  enter_stage(watchdog_, StartupStage::Attestation);
  links_->secure(
      tee.trust, config,
      TeeChannelOptions{ts.cipher, tee.settings.rekey_mb, static_cast<std::size_t>(ts.crypto_threads)},
      &profiler_, notices_);
  const std::optional<comm::AttestConfig>& attest = links_->attest();
  dist_.emplace(transport, links_->channel(), &profiler_);
  add_configuration(inputs_, config);
  if (attest && attest->anchor) add_trust(inputs_, *attest->anchor);
  if (attest && attest->real)
    add_real_attestation(inputs_, attest->real->verifier->facts());
  else if (attest)
    add_policy(inputs_, attest->policy);
  // Looked at once: the key release below follows this answer, whatever the disk says later.
  const std::string& data = plan_.data().path;
  const bool sealed_data = img_ ? img_->sealed() : !find_sealed_shards(data, "train").empty();
  add_setting(inputs_, Setting::DataAtRest, sealed_data ? "sealed" : "plain");
  add_setting(inputs_, Setting::Resume, plan_.checkpoints().resume.empty() ? "none" : "given");
  add_setting(inputs_, Setting::Adversary, tee.adversary ? comm::canonical_spec(*tee.adversary) : "none");
  add_setting(inputs_, Setting::Trace, plan_.output().trace.empty() ? "none" : "given");
  enter_stage(watchdog_, StartupStage::ConfigAgreement);
  agree_inputs(*dist_, inputs_);
  if (!ts.on) return;
  if (!sealed_data && !tee.allow_plain_data) {
    if (img_) refuse_plain_images(data);
    refuse_plain_shards(data);
  }
  TeeSession& session = *links_->session();
  if (attest && attest->real && world_ > 1) {
    attestation_record_ = agree_attestation_record(
        *dist_, own_entries(rank_, *attest->real, session.verified_peers()), attest->real->kind.name);
    add_attestation_record(inputs_, attestation_record_->sha256);
  }
  enter_stage(watchdog_, StartupStage::KeyRelease);
  if (!session.keys().group.empty()) add_key(inputs_, "session group key", session.keys().group.secret());
  at_rest_ = release_at_rest_keys(transport, session.keys(), tee.key_file, sealed_data,
                                  plan_.checkpoints().any(), print_warning);
  session.end_setup();  // every secret is out: wipe the session's link and group secrets
  if (at_rest_.dataset) add_key(inputs_, "dataset key", at_rest_.dataset->secret());
  if (at_rest_.checkpoint) add_key(inputs_, "checkpoint key", at_rest_.checkpoint->secret());
}

void TrainingRun::open_data() {
  const DataOptions& d = plan_.data();
  const TeeSwitches& ts = plan_.switches();
  if (!img_) {
    const ScheduleOptions& s = plan_.schedule();
    data_ = open_token_data(
        {d.path, s.seq, s.seed, d.ingress_gbps, model_vocab(plan_.model()), is_masked_lm(plan_.model())}, ts,
        at_rest_.dataset ? &*at_rest_.dataset : nullptr, rank_, profiler_);
    if (!data_.val && rank_ == 0 && !plan_.output().quiet)
      std::fprintf(stderr, "note: no validation split for --data %s; reporting training loss only\n",
                   d.path.c_str());
    add_token_data(inputs_, data_);
    return;
  }
  // Sealed image sets open only now, with the released dataset key (their shape came from the clear
  // metadata).
  if (img_->sealed()) {
    img_->open_sealed(*at_rest_.dataset,
                      {ts.direct_ingress ? IngressMode::Direct : IngressMode::Bounce, ts.cipher,
                       static_cast<uint32_t>(rank_), d.ingress_gbps},
                      &profiler_);
  }
  data_.train = img_->train;
  data_.val = img_->val;
  data_.describe = img_->describe;
  add_image_data(inputs_, *img_);
}

// The platform, chosen once from the plan (platform/platform.h). On the emulated one the real model and
// optimizer run on an EmulatedBackend, whose ops are waits on the chosen GPU; gradients' bytes,
// buckets, ring, crypto and ingress stay real.
void TrainingRun::build_model() {
  const ComputeOptions& c = plan_.compute();
  // Both collective on every rank, whatever its flags: a collective that only some ranks call hangs.
  enter_stage(watchdog_, StartupStage::Links);
  ranks_per_host_ = seat_ != nullptr ? seat_ranks_on_host_ : ranks_on_this_host();
  threads_ = run_threads(c.threads);
  enter_stage(watchdog_, StartupStage::OwnWork);
  platform_ = platform::platform_entry(c.platform())
                  .make(platform_options(c, plan_.switches().on, threads_, rank_, profiler_.clock()));
  backend_ = &platform_->backend();
  check_device_memory();
  model_ = make_model(*backend_, plan_.model());
  // Placeholder values (an emulated GPU's memory holds zeros): drawing 1.5B random numbers on the
  // host for gpt2-xl would only cost time and memory.
  if (platform_->real_values()) model_->init_params(plan_.schedule().seed);
  const std::string notice = platform_->notice(model_->name(), c.virtual_time());
  if (!notice.empty() && rank_ == 0) std::fprintf(stderr, "%s\n", notice.c_str());
  // Threads only compute where the model runs on this CPU (an emulated GPU's ops are waits).
  const bool cpu_compute = c.device == DeviceKind::Cpu && platform_->real_values();
  const std::string binding = cpu_compute ? thread_binding_warning(threads_) : std::string();
  if (!binding.empty() && rank_ == 0) print_warning(binding);
  // What decides the bits (Note [Agreed inputs], round two). oneDNN's convolutions reduce in an order
  // that depends on the thread count, so on the CPU the count is agreed too (docs/design.md §5).
  if (platform_->real_values()) add_setting(inputs_, Setting::Backend, backend_->numerics());
  if (cpu_compute) add_setting(inputs_, Setting::Threads, std::to_string(threads_));
  const OutputOptions& out = plan_.output();
  tc_.schedule = plan_.schedule();
  tc_.progress = !out.no_progress && !out.quiet;
  tc_.metrics_path = rank_ == 0 ? out.metrics : "";
  tc_.save_every = plan_.checkpoints().save_every;
  tc_.digest_params = platform_->real_values();
  // The buckets, planned here because a sharded run's optimizer holds state for its shard of each
  // (Note [Shard layout], engine/gradients/shard.h); one rank has no shard to cut.
  const double bucket_mb = plan_.parallel().bucket_mb;
  const std::size_t cap = static_cast<std::size_t>(bucket_mb * 1024.0 * 1024.0);
  buckets_ = plan_buckets(model_->params(), model_->num_params(),
                          std::min<std::size_t>(std::size_t{1} << 20, cap), cap);
  // A fold's rank updates its class's slowest shard (Note [Sharded fold], engine/gradients/shard.h).
  if (plan_.parallel().shard != ShardStage::None && plan_.reduced())
    shard_ = updated_shard(buckets_, model_->params(), rank_, world_, modelled_world());
  optimizer_ = make_optimizer(*backend_, tc_.schedule.optimizer, model_->num_params(),
                              sharded() ? std::optional(shard_) : std::nullopt);
  // ZeRO-3 starts from whole parameters (param_units.cpp): step 1's forward gathers nothing it waits for.
  if (plan_.parallel().shard == ShardStage::Params && plan_.reduced() && tc_.schedule.timing_warmup == 0 &&
      rank_ == 0)
    print_warning(
        "--shard params starts from whole parameters, so step 1's forward waits for no gather and is timed "
        "shorter than the steps after it; add --timing-warmup 1 to time only those");
  if (const long every = plan_.parallel().check_replicas; every > 0) {
    tc_.after_step = [this, every](long step) {
      if (step % every != 0) return;
      const WholeParams whole(reducer_.get());
      dist_->check_replicas(*backend_, *model_, step);
    };
  }
}

// --threads where given; else the smallest share of a host over the ranks (host_share_threads), so that
// the default is the same on every rank, whatever its host: the bits depend on the count (Note [Agreed
// inputs]), and a given count that differs between ranks is refused there. Collective.
int TrainingRun::run_threads(int requested) {
  const std::vector<int64_t> shares = dist_->gather(host_share_threads(ranks_per_host_));
  return requested > 0 ? requested : static_cast<int>(*std::min_element(shares.begin(), shares.end()));
}

// Checkpoints: rank 0 writes them (replicas are identical), and under --ckpt-layout sharded every rank
// writes its optimizer shard beside them (save_shards); every rank reads them on resume. They
// are sealed in TEE mode (the model, optimizer state and run state never rest in clear). The key
// owner's anti-rollback record (engine/checkpoint/freshness.h) needs the master key, which only rank 0 holds.
void TrainingRun::setup_checkpoints() {
  const CheckpointOptions& ck = plan_.checkpoints();
  const std::string& key_file = plan_.tee().key_file;
  codec_ = at_rest_.checkpoint ? make_sealed_codec(*at_rest_.checkpoint, plan_.switches().cipher)
                               : make_plain_codec();
  // The master key as rank 0 read it to release the keys (one read: the file could be replaced
  // between two), used for the freshness key and then dropped.
  if (at_rest_.master) freshness_.emplace(freshness_record_path(key_file), *at_rest_.master);
  at_rest_.master.reset();
  if (ck.save_every > 0 && rank_ == 0)
    store_ = std::make_unique<CheckpointStore>(ck.dir, ck.keep, *codec_, freshness_ ? &*freshness_ : nullptr,
                                               print_warning);
  tc_.save_checkpoint = [this](long step, uint64_t samples) {
    // Collective, in this order on every rank: the shards written (or the whole optimizer gathered),
    // then the parameters gathered, or at --shard params with sharded saves only their digest streamed
    // (Note [Parameter shards in the optimizer shard's file], checkpoint_manifest.h).
    const bool by_shard = shard_saves();
    const std::optional<ShardedSave> shards = by_shard ? save_shards(step) : std::nullopt;  // rank 0's
    const std::unique_ptr<Optimizer> whole = sharded() && !by_shard ? gather_optimizer(step) : nullptr;
    const std::string streamed = param_shard_saves() ? reducer_->streamed_params_sha256() : std::string();
    std::optional<WholeParams> params;
    if (!param_shard_saves()) params.emplace(reducer_.get());
    if (rank_ != 0) return;
    // A model without units (ResNet) keeps whole parameters at --shard params: no digest is streamed.
    const CheckpointMeta meta{step, samples, plan_.schedule().seed,
                              !streamed.empty() ? streamed : params_sha256(*backend_, *model_), plan_.json()};
    Optimizer* optimizer = by_shard ? nullptr : whole ? whole.get() : optimizer_.get();
    const auto dir = store_->save(*backend_, *model_, optimizer, meta, shards ? &*shards : nullptr);
    if (tc_.progress) std::fprintf(stderr, "\ncheckpoint: %s\n", dir.c_str());
  };
}

// --ckpt-layout sharded (the default under --shard): each rank saves its own optimizer shard.
bool TrainingRun::shard_saves() const {
  return sharded() && plan_.checkpoints().layout.value_or(CkptLayout::Sharded) == CkptLayout::Sharded;
}

// ZeRO-3 saving shards: each rank saves its parameter shard with its optimizer shard.
bool TrainingRun::param_shard_saves() const {
  return shard_saves() && plan_.parallel().shard == ShardStage::Params;
}

// A sharded save's collective part (CheckpointStore::begin_save): rank 0 opens the step's temporary
// directory and shares its path, every rank writes its optimizer shard there and sends rank 0 the
// file's name, size and SHA-256, all over the sealed channel in TEE mode. Rank 0 gets them all, with
// the layout the manifest records; the others get nothing to save.
std::optional<ShardedSave> TrainingRun::save_shards(long step) {
  constexpr std::size_t kMaxEntry = 4096;  // a path or one {"name","size","sha256"}
  const std::string tmp = rank_ == 0 ? store_->begin_save(step).string() : std::string();
  const auto paths = dist_->allgather_blobs(std::as_bytes(std::span(tmp.data(), tmp.size())), kMaxEntry);
  const std::string dir(reinterpret_cast<const char*>(paths[0].data()), paths[0].size());
  const CheckpointStore::ParamShard own{.model = *model_, .ranges = shard_};
  const std::string mine = encode_manifest_file(CheckpointStore::write_optimizer_shard(
      *codec_, dir, *backend_, *optimizer_, rank_, step, param_shard_saves() ? &own : nullptr));
  const auto entries = dist_->allgather_blobs(std::as_bytes(std::span(mine.data(), mine.size())), kMaxEntry);
  if (rank_ != 0) return std::nullopt;
  ShardedSave out{.layout = {.world = world_,
                             .stage = plan_.parallel().shard,
                             .params = model_->num_params(),
                             .shards = {}},
                  .files = {}};
  for (int r = 0; r < world_; ++r) {
    const auto& e = entries[static_cast<std::size_t>(r)];
    out.files.push_back(
        parse_manifest_file(std::span(reinterpret_cast<const std::uint8_t*>(e.data()), e.size()),
                            "rank " + std::to_string(r) + "'s checkpoint shard report"));
    out.layout.shards.push_back(shard_ranges(buckets_, r, world_));
  }
  return out;
}

void TrainingRun::restore_or_broadcast() {
  const std::string& resume = plan_.checkpoints().resume;
  if (resume.empty()) {
    enter_stage(watchdog_, StartupStage::InputAgreement);
    if (platform_->real_values())
      dist_->broadcast_params(*backend_, *model_);  // every replica starts from rank 0's parameters
    return;
  }
  const auto dir = CheckpointStore::resolve(resume);
  // Every rank runs the checks of `teetrain ckpt verify` (manifest, digests, chunks, chain); rank 0
  // also refuses a rollback past the freshness record (the others get no record: nullptr).
  // A sharded rank reads only its own shard of a sharded checkpoint cut as its run cuts them.
  const ShardWant want{.rank = rank_, .ranges = shard_};
  const VerifiedCheckpoint ck =
      open_verified_checkpoint(dir, codec_->key(), VerifyScope::Full, sharded() ? &want : nullptr);
  const FreshnessRecord* freshness = freshness_ ? &*freshness_ : nullptr;
  CheckpointMeta meta;
  if (ck.own_shard) {
    // Parameter shards (saved at --shard params): this rank's ranges now, the others' once the reducer
    // exists (gather_resumed_params).
    resumed_param_shard_ = ck.manifest.layout->stage == ShardStage::Params;
    meta = resumed_param_shard_ ? CheckpointStore::load_own_params(ck, *backend_, *model_, rank_, freshness)
                                : CheckpointStore::load(ck, *backend_, *model_, nullptr, freshness);
    CheckpointStore::load_own_shard(ck, *backend_, *optimizer_, rank_);
  } else {
    // Otherwise it reads the whole optimizer state (DDP's file, or every rank's shard: resharded) and
    // keeps its shard of it (engine/gradients/shard.h).
    const std::unique_ptr<Optimizer> whole =
        sharded() ? make_optimizer(*backend_, plan_.schedule().optimizer, model_->num_params()) : nullptr;
    meta = CheckpointStore::load(ck, *backend_, *model_, whole ? whole.get() : optimizer_.get(), freshness);
    if (whole) {
      const std::size_t n = model_->num_params();
      pack_shard_on(*backend_, shard_, n, whole->state_floats() / n, whole->state_data(),
                    optimizer_->state_data());
    }
  }
  if (store_) store_->continue_lineage(ck);  // same run_id; the next save chains to this manifest
  add_checkpoint(inputs_, ck);
  if (meta.config.contains("model") && meta.config["model"] != plan_.json()["model"]) {
    throw InputError("--resume " + dir.string() + ": checkpoint model " + meta.config["model"].dump() +
                     " differs from this run's; use the same --model and shape flags");
  }
  start_step_ = meta.step;
  samples_ = meta.samples_consumed;
  resumed_params_sha256_ = meta.params_sha256;
  if (start_step_ >= plan_.schedule().steps) {
    throw InputError("--resume: the checkpoint is at step " + std::to_string(start_step_) +
                     "; --steps must be larger to continue");
  }
  if (rank_ == 0 && !plan_.output().quiet) {
    std::fprintf(stderr, "resumed from %s at step %ld%s\n", dir.c_str(), start_step_,
                 freshness_ && freshness_->exists() ? " (not older than the freshness record)" : "");
    if (const auto& l = ck.manifest.layout) {
      std::fprintf(
          stderr, "%s\n",
          (ck.own_shard
               ? "each of " + std::to_string(l->world) + " ranks read its own optimizer shard" +
                     (resumed_param_shard_ ? " and parameter shard" : "")
               : "resharded: the optimizer state saved by " + std::to_string(l->world) +
                     " ranks at --shard " + enum_name(l->stage) + ", read whole by each of " +
                     std::to_string(world_) + " ranks at --shard " + enum_name(plan_.parallel().shard))
              .c_str());
    }
    const std::string rollback = rollback_warning(freshness_ ? &*freshness_ : nullptr);
    if (!rollback.empty()) print_warning(rollback);
  }
}

// After a resume that read only this rank's parameter shard: every rank's shards all-gathered (collective,
// labelled as a save's first optimizer gather at the resumed step, which this run never makes), and the
// whole checked against state.json's params_sha256, so that the run continues bit-exactly or not at all.
void TrainingRun::gather_resumed_params() {
  if (!resumed_param_shard_) return;
  reducer_->all_gather_shards(model_->param_data(), start_step_, static_cast<int>(buckets_.size()) + 1);
  if (params_sha256(*backend_, *model_) != resumed_params_sha256_)
    throw IntegrityError("--resume: the parameter shards gathered do not hash to state.json's params_sha256");
}

// Every input is open (data, checkpoint) and no step has run: every rank checks that all of them
// opened the same things, and that the data owner's pins hold (Note [Agreed inputs], round two).
void TrainingRun::agree_on_inputs() {
  inputs_ = agree_inputs(*dist_, inputs_, {plan_.data().expect_dataset, plan_.checkpoints().expect});
}

// Note [Shared buffers] (comm/transport/shm_transport.h): where the ring adds this CPU's gradients in
// plaintext and reaches other ranks of this host through shared memory, the gradient arena moves into a
// SharedBuffer shared with the transport, so that those ranks add from it in place. Returns where the
// gradients are and why.
std::string TrainingRun::place_grads() {
  const bool host_grads = plan_.compute().platform() == DeviceKind::Cpu && platform_->real_values();
  const ShardStage stage = plan_.parallel().shard;
  if (host_grads && (stage == ShardStage::Gradients || stage == ShardStage::Params)) {
    grad_release_.emplace(model_->num_params() * sizeof(float));
    model_->place_grads({grad_release_->floats(), model_->num_params()});
    const std::string released =
        "private, 4 KiB pages; each bucket's pages outside this rank's shard are "
        "released after its reduce-scatter (--shard " +
        std::string(name(stage)) + ")";
    if (stage != ShardStage::Params) return released;
    // Note [Pooled pages]: two units' worth (at P = 2 a unit's release is half a unit; one unit's worth
    // left a quarter of the pages a step writes to the kernel on gpt2-mini, two left 5 %).
    std::size_t unit_bytes = 0;
    for (const ParamUnit& u : model_->param_units())
      unit_bytes = std::max(unit_bytes, (u.end - u.begin) * sizeof(float));
    page_pool_.emplace(kPoolUnits * unit_bytes);
    return released + ", through a pool of at most " + std::to_string(page_pool_->capacity() >> 10) +
           " KiB of released pages (twice the largest unit) for the next range written";
  }
  if (platform_->device_gradients() && (stage == ShardStage::Gradients || stage == ShardStage::Params))
    return "device memory, resident whole: a GPU releases no bucket's gradients after its reduce-scatter "
           "(--shard " +
           std::string(name(stage)) + " keeps only its shard's sums)";
  if (plan_.parallel().grad_memory == comm::BufferMemory::Private)
    return "private (--grad-memory private, the default)";
  if (plan_.switches().on) return "private (a TEE keeps the plaintext gradients to this rank)";
  if (plan_.compute().platform() != DeviceKind::Cpu || !platform_->real_values())
    return "private (the gradients are not in this CPU's memory)";
  comm::Transport& t = links_->transport();
  bool host_peer = false;
  for (int r = 0; r < world_; ++r) host_peer = host_peer || (r != rank_ && t.sums_on_receive(r));
  if (!host_peer) return "private (no other rank on this host is reached through shared memory)";
  std::string error;
  auto buffer = comm::SharedBuffer::create(model_->num_params() * sizeof(float), error);
  if (!buffer) return "private (no shared buffer: " + error + ")";
  grad_buffer_.emplace(std::move(*buffer));
  model_->place_grads(grad_buffer_->floats());
  grad_share_.emplace(t, *grad_buffer_);
  return "shared (the ranks on this host add from each other's gradients in place)";
}

// Gradient reduction on the reducer's communication thread: one path, chosen by the engine from the
// plan, over the link the ranks agree on here (collective).
void TrainingRun::build_reducer() {
  const ParallelOptions& par = plan_.parallel();
  if (plan_.reduced()) grad_memory_ = place_grads();
  const LinkFacts link = links_->agree_link(par.link == LinkModel::Emulate);
  path_ = build_gradient_path(GradientSetup{.parallel = par,
                                            .compute = plan_.compute(),
                                            .tee = plan_.switches(),
                                            .platform = *platform_,
                                            .mpi = links_->mpi(),
                                            .transport = links_->transport(),
                                            .channel = links_->channel(),
                                            .sealed = links_->sealed(),
                                            .ranks_on_host = ranks_per_host_,
                                            .profiler = profiler_,
                                            .link = link,
                                            .adversary = plan_.tee().adversary.has_value(),
                                            .prices = prices_});
  if (!plan_.reduced()) return;
  // Note [Gradient norm order]: in one order wherever sharding runs on real values (the CPU's or a GPU's),
  // so that DDP and ZeRO agree.
  const bool ordered_norm = platform_->real_values();
  const bool host_grads = plan_.compute().platform() == DeviceKind::Cpu && ordered_norm;
  reducer_ = std::make_unique<DdpReducer>(*backend_, *model_, buckets_, *path_,
                                          DdpOptions{.overlap = par.overlap,
                                                     .world = modelled_world(),
                                                     .rank = rank_,
                                                     .shard = par.shard,
                                                     .ordered_norm = ordered_norm,
                                                     .prefetch = par.prefetch,
                                                     .release = grad_release_ ? &*grad_release_ : nullptr,
                                                     .pool = page_pool_ ? &*page_pool_ : nullptr,
                                                     .measure_resident = host_grads,
                                                     .device_memory = platform_->device_gradients()},
                                          &profiler_);
}

TrainResult TrainingRun::run() {
  RankInfo ranks{rank_, world_, plan_.parallel().model_ranks, [this](double x) { return dist_->mean(x); }};
  if (profiler_.virtual_time()) {
    // Note [Virtual time]: where the ranks wait for each other on the training thread, their times meet.
    ranks.sync_clocks = [this] {
      RunClock& clock = profiler_.clock();
      const double mine = static_cast<double>(clock.now().time_since_epoch().count());
      const double latest = dist_->max_and_mean({mine}).first.at(0);
      clock.advance_to(RunClock::TimePoint(RunClock::TimePoint::duration(static_cast<long long>(latest))));
    };
  }
  Trainer trainer(*backend_, *model_, *optimizer_, profiler_, ranks, reducer_.get(), tc_, data_.train,
                  data_.val);
  return trainer.run(start_step_, samples_);
}

RunReport TrainingRun::finish(const TrainResult& r) {
  RunReport out;
  out.phases = gather_phase_report(*dist_, profiler_, r.timed_steps);
  out.adversary_view = links_->wire().report();
  if (const std::string& trace = plan_.output().trace; !trace.empty()) {
    write_trace_part(trace, rank_, profiler_.trace_events());
    dist_->mean(0.0);  // barrier: every part is on disk before rank 0 merges
    if (rank_ == 0) out.trace_parts = merge_trace_parts(trace, world_);
  }
  return out;
}

bool TrainingRun::bf16_emulated() const {
  const EmulatedGpu* gpu = platform_->modelled_gpu();
  return gpu != nullptr && gpu->precision == GpuPrecision::Bf16;
}

// The state each rank keeps (engine/state_memory.h: what --shard leaves it), and with bf16 a 16-bit copy
// of the parameters for the matmuls.
double TrainingRun::memory_state_gib() const {
  return state_bytes().state() / kGiB;
}

StateBytes TrainingRun::state_bytes() const {
  return state_bytes(plan_.reduced() ? plan_.parallel().shard : ShardStage::None);
}

// From the model's configuration (models' registry), so that it is known before the model is built.
StateBytes TrainingRun::state_bytes(ShardStage stage) const {
  const ScheduleOptions& s = plan_.schedule();
  const ComputeOptions& c = plan_.compute();
  const ModelMemory m =
      for_baseline(model_memory(plan_.model(), s.batch, s.seq),
                   c.mode == ComputeMode::Emulated ? c.gpu.baseline : GpuBaseline::Teetrain);
  return state_bytes_per_rank(m, stage, modelled_world(), bf16_emulated());
}

double TrainingRun::memory_gib() const {
  return state_bytes().total() / kGiB;
}

// "parameters 29.92, gradients 29.92, optimizer state 59.83, activations 0.63, gathered units 0.00 GiB
// (of the emulated h100's 80 GiB)": the banner's memory line.
std::string TrainingRun::memory_description() const {
  const StateBytes b = state_bytes();
  char text[200];
  std::snprintf(text, sizeof text,
                "parameters %.2f, gradients %.2f, optimizer state %.2f, activations %.2f, gathered units "
                "%.2f GiB per rank",
                b.params / kGiB, b.grads / kGiB, b.optimizer / kGiB, b.activations / kGiB, b.gathered / kGiB);
  const EmulatedGpu* gpu = platform_->modelled_gpu();
  if (gpu == nullptr || gpu->spec.memory_gib <= 0) return text;
  char fits[80];
  std::snprintf(fits, sizeof fits, " (of the emulated %s's %.0f GiB)", gpu->spec.name.c_str(),
                gpu->spec.memory_gib);
  return text + std::string(fits);
}

// Before the model is built: an emulated GPU holds what its rank needs, or the run is refused with the
// numbers and each stage's total at this world size, so that the user sees which one fits.
void TrainingRun::check_device_memory() const {
  const EmulatedGpu* gpu = platform_->modelled_gpu();
  if (gpu == nullptr || gpu->spec.memory_gib <= 0) return;
  const StateBytes b = state_bytes();
  if (b.total() <= gpu->spec.memory_gib * kGiB) return;
  const ShardStage stage = plan_.reduced() ? plan_.parallel().shard : ShardStage::None;
  char need[320];
  std::snprintf(
      need, sizeof need,
      "%s needs %.1f GiB per rank with --shard %s at %d rank(s), more than the emulated %s's %.0f GiB "
      "(parameters %.1f, gradients %.1f, optimizer state %.1f, activations %.1f, gathered units %.1f)",
      plan_.model().name.c_str(), b.total() / kGiB, name(stage), modelled_world(), gpu->spec.name.c_str(),
      gpu->spec.memory_gib, b.params / kGiB, b.grads / kGiB, b.optimizer / kGiB, b.activations / kGiB,
      b.gathered / kGiB);
  if (modelled_world() == 1)
    throw InputError(std::string(need) +
                     ": one rank keeps the whole state; start several under mpirun with "
                     "--shard optimizer|gradients, or lower --batch or --seq");
  std::string stages;
  for (const auto& [word, s] : EnumNames<ShardStage>::all) {
    char one[64];
    std::snprintf(one, sizeof one, "%s%s %.1f", stages.empty() ? "" : ", ", stage_label(s),
                  state_bytes(s).total() / kGiB);
    stages += one;
  }
  throw InputError(std::string(need) + ": per rank at " + std::to_string(modelled_world()) + " ranks, " +
                   stages +
                   " GiB (--shard none|optimizer|gradients|params); choose a stage that fits, start more "
                   "ranks, or lower --batch or --seq");
}

// A sharded run's whole optimizer state in DDP's layout, every rank's shard all-gathered (collective):
// what its checkpoints save (engine/gradients/shard.h). Labelled after the parameters' buckets and the
// norm's parts.
std::unique_ptr<Optimizer> TrainingRun::gather_optimizer(long step) {
  const std::size_t n = model_->num_params();
  std::unique_ptr<Optimizer> whole = make_optimizer(*backend_, plan_.schedule().optimizer, n);
  const std::size_t slots = whole->state_floats() / n;
  expand_shard_on(*backend_, shard_, n, slots, optimizer_->state_data(), whole->state_data());
  const int nb = static_cast<int>(buckets_.size());
  for (std::size_t s = 0; s < slots; ++s)
    reducer_->all_gather_shards(whole->state_data() + s * n, step, nb + 1 + static_cast<int>(s) * nb);
  return whole;
}

// The banner's shard line: the stage and what this rank keeps of it (Note [Shard layout]).
std::string TrainingRun::shard_description() const {
  const ShardStage stage = plan_.parallel().shard;
  if (stage == ShardStage::None) return "";
  const std::size_t state = optimizer_->state_floats() / (optimizer_->name() == "adamw" ? 2 : 1);
  const StateBytes b = state_bytes();
  constexpr double kMiB = 1024.0 * 1024.0;
  char bytes[160];
  std::snprintf(bytes, sizeof bytes,
                "; per rank: parameters %.2f MiB, gradients %.2f MiB, optimizer state %.2f MiB",
                b.params / kMiB, b.grads / kMiB, b.optimizer / kMiB);
  const std::size_t units = stage == ShardStage::Params ? model_->param_units().size() : 0;
  const std::string gathered =
      units > 0 ? "; its " + std::to_string(units) + " blocks gathered for their forward and backward" : "";
  return std::string(name(stage)) + " (" + stage_label(stage) + "): rank " + std::to_string(rank_) +
         " updates " + std::to_string(state) + " of " + std::to_string(model_->num_params()) +
         " parameters (its ring chunk of each of " + std::to_string(buckets_.size()) + " buckets)" + bytes +
         gathered;
}

// A GPU's gradient buffer is allocated whole and never released in part (Note [Released gradient pages] is
// the CPU's), so there its peak is the whole buffer, known rather than measured.
nlohmann::json TrainingRun::grads_resident_peak() const {
  if (reducer_ != nullptr && platform_->device_gradients())
    return nlohmann::json(model_->num_params() * sizeof(float));
  const std::size_t peak = reducer_ != nullptr ? reducer_->peak_grad_resident_bytes() : 0;
  return peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
}

RunDescription TrainingRun::gather_facts() const {
  RunDescription d;
  d.model = model_->name();
  d.params = model_->num_params();
  d.memory_gib = memory_gib();
  d.memory_state_gib = memory_state_gib();
  d.memory = memory_description();
  d.world = modelled_world();
  d.ranks_run = world_;
  if (d.world != world_)
    d.fold = "a ring of " + std::to_string(d.world) + " ranks modelled by the " + std::to_string(world_) +
             " run, each in its own position (--model-ranks; per-hop all-gathers; docs/reproducing.md, "
             "\"Folded ring\")";
  d.reduced = plan_.reduced();
  d.threads = threads_;
  d.tee = tee_label(plan_.tee(), plan_.switches());
  d.buckets = buckets_.size();
  d.data = data_.describe;
  d.backend = backend_->describe();
  d.cc_transfer_us = platform_->cc_transfer_us();
  if (d.reduced) {
    d.gradients = path_->describe();
    d.segment = path_->segment();
    d.host_transport = links_->host_transport_description();
    d.grad_memory = grad_memory_;
    d.shard = shard_description();
  } else {
    d.gradients = "not reduced (one rank)";
  }
  if (plan_.switches().on && world_ == 1)
    d.single_rank_note = std::string("--tee ") + name(plan_.tee().settings.mode) +
                         " on 1 rank: no gradient crosses a link, so only the data and checkpoints are "
                         "sealed; for data-parallel training under the TEE start several ranks: "
                         "mpirun -np N teetrain train ...";
  d.attestation_summary = attestation_json(links_->attest(), attestation_record_, world_);
  // A TEE run holds a dataset key exactly when its data is sealed (start_links).
  const bool plain_data = plan_.switches().on && !at_rest_.dataset;
  d.opt_outs = opt_outs(plan_.tee(), links_->attest(), plain_data, world_);
  if (const auto& attest = links_->attest()) {
    d.attestation = attestation_banner(*attest, world_);
    if (const TeeSession* session = links_->session())
      for (const auto& p : session->verified_peers())
        d.attestation += "; verified rank " + std::to_string(p.rank) + ": " + p.measurements;
    d.unauthenticated = !attestation_summary(*attest, world_).warning.empty();
  }
  d.images = img_.has_value();
  d.agreed_inputs = inputs_.describe();
  return d;
}

namespace {
// A GPU in CC mode (Note [CC hardware costs], core/emulated/emulated_gpu.h): what CC added to the
// compute stream per step, on average over every step run (warm-up included), beside the phases that
// hold it (launches: forward, backward, optimizer; the batch's copy: forward). Null with CC off.
nlohmann::json cc_hardware_json(const EmulatedGpu* gpu, const platform::Platform::CcCharges& c, long steps) {
  if (gpu == nullptr || !gpu->cc.on() || steps <= 0) return nullptr;
  const double n = static_cast<double>(steps);
  return {{"name", enum_name(gpu->cc.hardware)},        {"source", gpu->cc.source},
          {"launch_extra_us", gpu->cc.launch_extra_us}, {"copy_d2h_gbps", gpu->cc.d2h_gbps},
          {"copy_h2d_gbps", gpu->cc.h2d_gbps},          {"kernel_launches_s_per_step", c.launch_s / n},
          {"copies_s_per_step", c.copy_s / n}};
}
// Bytes of each gradient bucket, in launch order (4-byte floats).
nlohmann::json bucket_bytes_json(const std::vector<Bucket>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (const Bucket& b : buckets) out.push_back(b.size() * sizeof(float));
  return out;
}
}  // namespace

nlohmann::json TrainingRun::summary(const TrainResult& r, const RunReport& report) const {
  const RunDescription& d = facts_;
  const AlgoSelection* selection = d.reduced ? path_->selection() : nullptr;
  const EmulatedGpu* gpu = platform_->modelled_gpu();
  const nlohmann::json& phases = report.phases;
  const auto or_null = [&d](const std::string& v) {
    return d.reduced ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json s = result_json(r, d.images);
  const nlohmann::json device_memory = gpu != nullptr ? nlohmann::json(gpu->spec.memory_gib) : nullptr;
  // The emulated cluster's nodes and links (core/emulated/topology.h); null without one.
  const nlohmann::json topology =
      gpu != nullptr && gpu->topology.given() ? nlohmann::json(gpu->topology.describe(d.world)) : nullptr;
  s.update({{"num_params", d.params},
            {"memory_gib_per_rank", d.memory_gib},
            {"memory_state_gib_per_rank", d.memory_state_gib},
            {"world_size", d.world},
            // Note [Folded ring]: the ranks that ran, fewer than world_size when a fold models the ring.
            {"ranks_run", d.ranks_run},
            {"folded_ring", d.fold.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.fold)},
            {"allreduce", name(plan_.parallel().allreduce)},
            {"gradient_path", d.reduced ? d.gradients : "none"},
            // What each bucket took: known once the run has summed them.
            {"allreduce_selection", selection != nullptr ? selection->summary() : nlohmann::json(nullptr)},
            {"cc_transfer_us", d.cc_transfer_us},
            {"topology", topology},
            {"cc_hardware", cc_hardware_json(gpu, platform_->cc_charges(), r.steps)},
            // Note [GPU crypto shares the SMs]: per step run, warm-up included (as cc_hardware's).
            {"sm_wait_s_per_step",
             r.steps > 0 ? platform_->cc_charges().sm_wait_s / static_cast<double>(r.steps) : 0.0},
            // The segments as cut (config's segment_kb 0 is automatic: engine/gradients/segments.h).
            {"segment_bytes", d.segment ? nlohmann::json(d.segment->bytes) : nlohmann::json(nullptr)},
            {"segment", d.segment ? nlohmann::json(d.segment->why) : nlohmann::json(nullptr)},
            {"host_transport", or_null(d.host_transport)},
            {"grad_memory", or_null(d.grad_memory)},
            {"shard", name(plan_.parallel().shard)},
            {"state_bytes_per_rank",
             {{"params", state_bytes().params},
              {"grads", state_bytes().grads},
              {"optimizer", state_bytes().optimizer},
              {"activations", state_bytes().activations},
              {"gathered", state_bytes().gathered},
              // ZeRO-3: the most parameter bytes outside the shard present while a block computed
              // (measured from the second step on; Note [ZeRO-3 units follow the buckets]).
              {"gathered_peak", reducer_ != nullptr ? 4 * reducer_->peak_gathered_floats() : 0},
              // Host gradients: the most bytes of the gradient buffer resident at once, measured with
              // mincore (Note [Released gradient pages]); null where the gradients are not host memory.
              {"grads_resident_peak", grads_resident_peak()},
              // Note [Pooled pages]: released pages kept for the next range written, resident too.
              {"pool_resident_peak",
               page_pool_ ? nlohmann::json(page_pool_->peak_bytes()) : nlohmann::json(nullptr)}}},
            {"device_memory_gib", device_memory},
            {"bucket_mb", plan_.parallel().bucket_mb},
            {"buckets", d.buckets},
            {"bucket_bytes", bucket_bytes_json(buckets_)},  // launch order: what the scaling model reads
            {"overlap", plan_.parallel().overlap ? "on" : "off"},
            {"tee", plan_.json().at("tee")},  // the agreed configuration's: the resolved mode and switches
            {"rekeys", links_->session() != nullptr ? links_->session()->channel().rekeys() : 0},
            {"attestation", d.attestation_summary},
            {"opt_outs", d.opt_outs},
            {"agreed_inputs", inputs_.to_json()},
            {"bytes_sent", phases["counters"]["bytes_sent"]},
            {"phases", phases["phases"]},
            {"phases_accounted_s", main_thread_seconds(phases)},
            {"counters", phases["counters"]},
            {"backend", d.backend},
            {"threads", d.threads},
            {"host_cores", host_cores()},
            {"ranks_per_host", ranks_per_host_},
            {"compute", name(plan_.compute().mode)},
            {"gpu", gpu ? nlohmann::json(gpu->describe()) : nlohmann::json(nullptr)},
            {"config", plan_.json()}});
  return s;
}

}  // namespace tt
