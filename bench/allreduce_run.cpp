#include "bench/allreduce_run.h"

#include <algorithm>

#include "base/error.h"
#include "engine/gradients/gradient_paths.h"
#include "engine/run/dist_context.h"
#include "engine/run/host_layout.h"
#include "engine/run/input_agreement.h"

namespace tt {

bool runs_mode(const AllreduceBenchOptions& o, std::string_view name) {
  return std::any_of(o.modes.begin(), o.modes.end(),
                     [name](const bench::BenchMode* m) { return m->name == name; });
}

nlohmann::json allreduce_config_json(const AllreduceBenchOptions& o) {
  std::vector<std::string> modes;
  for (const bench::BenchMode* m : o.modes) modes.emplace_back(m->name);
  return {{"command", "bench allreduce"},
          {"min_bytes", o.min_bytes},
          {"max_bytes", o.max_bytes},
          {"factor", o.factor},
          {"warmup", o.warmup},
          {"iters", o.iters},
          {"modes", modes},
          {"segment_kb", o.segment_kb},
          {"allreduce_cost", o.cost.empty()
                                 ? nlohmann::json(nullptr)
                                 : cost_model_json(load_cost_model(o.cost, o.tee.settings.mode).model)},
          {"comm_wait", enum_name(*o.comm_wait)},
          {"host_transport", enum_name(o.host_transport)},
          {"buffer", enum_name(*o.buffer)},
          {"tee", tee_json(o.tee)}};
}

namespace {

const bench::BenchMode* mode(std::string_view name) {
  return bench::find_bench_mode(name);
}

// Which rows run: a sealed bench and the adversary both have only our algorithms to act on.
void choose_modes(AllreduceBenchOptions& o, bool tee_on) {
  const char* tee_mode = name(o.tee.settings.mode);
  if (o.algo != nullptr) {
    // --allreduce-algo X: our rows are X alone, beside the reference (MPI_Allreduce, or the plain ring).
    if (o.modes_given)
      throw InputError("--allreduce-algo names our one algorithm; --modes lists them all: give one");
    o.modes = {o.algo, mode("mpi")};
  }
  if (tee_on) {
    // MPI_Allreduce moves plaintext through MPI's buffers: it has no sealed counterpart to compare.
    // The plaintext ring runs beside the sealed ones instead, so what sealing costs is measured in one run.
    if (!o.modes_given) std::replace(o.modes.begin(), o.modes.end(), mode("mpi"), mode("plain"));
    if (runs_mode(o, "mpi"))
      throw InputError(std::string("--modes mpi cannot be sealed; use --modes ring,plain with --tee ") +
                       tee_mode);
  } else if (runs_mode(o, "plain")) {
    throw InputError(
        "--modes plain is the plaintext ring beside a sealed one: use it with --tee cc|fast (with --tee "
        "off, ring is the plaintext ring)");
  }
  if (o.tee.adversary) {
    // The adversary sits on our algorithms' transport: MPI_Allreduce and the plain reference bypass it.
    if (!o.modes_given) o.modes = {o.algo != nullptr ? o.modes.front() : mode("ring")};
    if (!std::all_of(o.modes.begin(), o.modes.end(), [](const bench::BenchMode* m) { return m->ours(); }))
      throw InputError(
          "--adversary attacks our algorithms only; use --modes ring|rd|rhd|auto (MPI_Allreduce "
          "bypasses it)");
  }
  const bool all = runs_mode(o, "ring") && runs_mode(o, "rd") && runs_mode(o, "rhd");
  if (!o.calibrate.empty() && !all)
    throw InputError(
        "--calibrate fits the cost model to ring, rd and rhd: run all three (--modes ring,rd,rhd,...)");
}

// The options resolved against the TEE mode: rows, waits and buffers.
AllreduceBenchOptions resolved(AllreduceBenchOptions o, const TeeSwitches& ts) {
  choose_modes(o, ts.on);
  if (!o.comm_wait) o.comm_wait = fair_wait_mode();
  // Note [Shared buffers] (comm/transport/shm_transport.h): a shared buffer shows its plaintext to the host.
  if (!o.buffer) o.buffer = ts.on ? comm::BufferMemory::Private : comm::BufferMemory::Shared;
  if (ts.on && *o.buffer == comm::BufferMemory::Shared)
    throw InputError(
        "bench allreduce: --buffer shared lets every process of this host's user read the "
        "gradients in place; it is for --tee off only (drop --buffer, or use --buffer private)");
  return o;
}

// The ring exactly as train runs it for the mode (engine/gradients/gradient_paths.h: ring_options).
bench::BenchOptions options_for(const AllreduceBenchOptions& o, const TeeSwitches& ts,
                                std::size_t segment_bytes) {
  bench::BenchOptions bo;
  bo.min_bytes = o.min_bytes;
  bo.max_bytes = o.max_bytes;
  bo.step_factor = o.factor;
  bo.warmup = o.warmup;
  bo.iters = o.iters;
  bo.check = true;  // sealing must never change the sum: every size is checked in every mode
  bo.ring = ring_options(ts, segment_bytes);
  bo.buffer = *o.buffer;
  return bo;
}

}  // namespace

// The same links as `teetrain train` (engine/run/rank_links.h): in TEE mode the same attestation, key
// agreement and single sealed channel, so the bench measures exactly the ring that training runs.
AllreduceRun::AllreduceRun(AllreduceBenchOptions o, RunServices services)
    : ts_(resolve_tee(o.tee.settings, /*gpu_gradients=*/false)) {
  StartupWatchdog* watchdog = services.watchdog;
  if (watchdog != nullptr) watchdog->set_timeout(comm::Transport::kDefaultTimeout);
  enter_stage(watchdog, StartupStage::Links);  // resolving the waits counts the host's ranks: collective
  o_ = resolved(std::move(o), ts_);
  links_.emplace(MPI_COMM_WORLD, comm::Transport::kDefaultTimeout, *o_.comm_wait, o_.host_transport,
                 o_.tee.adversary, ts_.on);
  // The adversary's rows are ours alone (choose_modes): one algorithm, or any of them (auto).
  const bool one_algo = o_.modes.size() == 1 && o_.modes.front()->algo.has_value();
  links_->wire().route_through(one_algo ? o_.modes.front()->algo : std::nullopt, 0, /*split=*/false);
  enter_stage(watchdog, StartupStage::Attestation);
  links_->secure(
      o_.tee.trust, allreduce_config_json(o_).dump(),
      TeeChannelOptions{ts_.cipher, o_.tee.settings.rekey_mb, static_cast<std::size_t>(ts_.crypto_threads)},
      nullptr, services.notices);
  if (TeeSession* session = links_->session()) session->end_setup();  // the bench releases no secret
  // Alone, a rank has no link to time: every row would be a local copy with a bus bandwidth of 0. (Its
  // options, the TEE's included, are checked first: a bad one is named before this.)
  if (links_->size() < 2) {
    throw InputError(
        "bench allreduce times the links between ranks and needs at least 2: run it under mpirun, e.g. "
        "`mpirun -np 2 teetrain bench allreduce` (more ranks than cores: add --oversubscribe)");
  }
  // Every rank runs the same rows on the same sizes, or one waits for a message its peers never send
  // (a timeout that blames a live peer). Attestation binds the configuration in TEE mode; in plaintext
  // this is the only check, and in both a difference is one line naming the rank (exit 2).
  enter_stage(watchdog, StartupStage::ConfigAgreement);
  {
    DistContext dist(links_->transport(), links_->channel(), nullptr);
    InputRecord mine;
    add_configuration(mine, allreduce_config_json(o_).dump());
    agree_inputs(dist, mine);
  }
  // The link every row is built on (collective), and the segments it cuts.
  enter_stage(watchdog, StartupStage::Links);
  link_ = links_->agree_link(/*emulated_links=*/false);
  segment_ = pick_segment(o_.segment_kb, link_);
  bo_ = options_for(o_, ts_, segment_.bytes);
  cpu_ = platform::platform_entry(DeviceKind::Cpu).make(platform::Options{});
  paths_.emplace(*links_, *cpu_, BenchPathOptions{o_.tee.settings, o_.segment_kb, o_.cost}, link_);
  enter_stage(watchdog, StartupStage::Running);
}

std::string AllreduceRun::adversary_banner() {
  return links_->wire().active() ? links_->wire().banner() : std::string();
}

std::string AllreduceRun::adversary_report() {
  return links_->wire().report();
}

CostModelSource AllreduceRun::cost_source() const {
  ParallelOptions parallel;
  parallel.cost = o_.cost;
  return cost_model_for(parallel, ComputeOptions{}, ts_, nullptr, link_);
}

std::vector<bench::BenchAlgo> AllreduceRun::rows() {
  return paths_->rows(o_.modes);
}

}  // namespace tt
