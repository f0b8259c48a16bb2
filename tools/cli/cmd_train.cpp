// `teetrain train`: parses the flags into TrainOptions, lets the engine build and run the training run
// (engine/run/training_run.h), and prints what it reports: the banner (stderr), the phase table and the
// result line (stdout), and the --summary file.
#include <cstdio>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "engine/gradients/allreduce_selection.h"
#include "engine/run/training_run.h"
#include "engine/run/virtual_rank_host.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/run_report.h"
#include "tools/cli/train_command.h"
#include "tools/cli/train_flags.h"

namespace tt::cli {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

void print_banner(const RunDescription& d, const ParallelOptions& p) {
  std::fprintf(
      stderr,
      "teetrain train: %s (%zu params, %.2f GiB/rank) | %d rank(s) x %d thread(s) | %s | %zu bucket(s), "
      "allreduce %s, overlap %s\n  data %s\n  backend %s\n  gradients %s\n",
      d.model.c_str(), d.params, d.memory_gib, d.world, d.threads, d.tee.c_str(), d.buckets,
      name(p.allreduce), p.overlap ? "on" : "off", d.data.c_str(), d.backend.c_str(), d.gradients.c_str());
  if (!d.fold.empty()) std::fprintf(stderr, "  folded ring %s\n", d.fold.c_str());
  if (d.segment) std::fprintf(stderr, "  ring segments %s\n", d.segment->why.c_str());
  if (!d.host_transport.empty()) std::fprintf(stderr, "  host transport %s\n", d.host_transport.c_str());
  if (!d.grad_memory.empty()) std::fprintf(stderr, "  gradients' memory %s\n", d.grad_memory.c_str());
  if (!d.shard.empty()) std::fprintf(stderr, "  shard %s\n", d.shard.c_str());
  std::fprintf(stderr, "  memory %s\n", d.memory.c_str());
  if (!d.attestation.empty()) std::fprintf(stderr, "  attestation %s\n", d.attestation.c_str());
  if (!d.single_rank_note.empty()) std::fprintf(stderr, "note: %s\n", d.single_rank_note.c_str());
  if (!d.opt_outs.empty()) std::fprintf(stderr, "  opt-outs %s\n", joined(d.opt_outs).c_str());
}

// What the run produced goes to stdout (`train ... > out.txt` keeps it); what it says about itself
// while running — banner, progress, warnings, errors — goes to stderr.
void print_result(const RunDescription& d, const TrainResult& r, const RunReport& report, bool quiet) {
  char val[32] = "none";  // no validation split, or --val-batches 0
  if (r.val_loss >= 0) std::snprintf(val, sizeof val, "%.4f", r.val_loss);
  // The result line names every opt-out, so `-q 2>/dev/null` never shows a clean result of a run that
  // gave a protection up.
  const std::string given_up = d.opt_outs.empty() ? "" : " | opt-outs: " + joined(d.opt_outs);
  std::printf("done: %ld steps, loss %.4f, val_loss %s, %.0f %s, %.3f s/step, params_sha256 %s%s\n", r.steps,
              r.final_loss, val, r.items_per_s, d.images ? "images/s" : "tok/s", r.step_seconds_mean,
              r.params_sha256.c_str(), given_up.c_str());
  if (r.val_accuracy >= 0) std::printf("val_accuracy %.2f%%\n", 100.0 * r.val_accuracy);
  if (!report.adversary_view.empty()) std::printf("%s", report.adversary_view.c_str());
  if (!quiet)
    std::printf("inputs (what every rank opened, agreed by %d rank(s)):\n%s", d.ranks_run,
                d.agreed_inputs.c_str());
  std::fflush(stdout);
  if (d.unauthenticated) std::fprintf(stderr, "%s\n", d.attestation.c_str());
}

// What a GPU in CC mode added inside the phases above (the summary's cc_hardware; nothing with CC off).
void print_cc_hardware(const nlohmann::json& cc) {
  if (cc.is_null()) return;
  std::printf(
      "of which the GPU's CC mode (%s, %s): kernel launches %.3f ms/step (+%.2f us each; forward, "
      "backward, optimizer), host<->device copies %.3f ms/step (the batch through the bounce buffers; "
      "forward)\n",
      cc.at("name").get<std::string>().c_str(), cc.at("source").get<std::string>().c_str(),
      cc.at("kernel_launches_s_per_step").get<double>() * 1e3, cc.at("launch_extra_us").get<double>(),
      cc.at("copies_s_per_step").get<double>() * 1e3);
}

void write_summary(const std::string& path, const nlohmann::json& summary) {
  write_json_file("--summary", path, summary);
}

// The CLI's part: let the engine build the run, train, report. `key_file_given`: --key-file was on
// the command line (not just its default).
void run_train(const TrainOptions& opts, bool key_file_given, RunServices services) {
  TrainingRun run(opts, services);
  const RunDescription d = run.describe();
  const OutputOptions& out = run.plan().output();
  if (run.rank() == 0 && !out.quiet) print_banner(d, run.plan().parallel());
  if (run.rank() == 0 && key_file_given && opts.tee.settings.mode == TeeMode::Off)
    std::fprintf(stderr,
                 "note: --key-file is not used with --tee off: plain runs read plain data and write plain, "
                 "unauthenticated checkpoints (it seals and opens them with --tee cc or fast)\n");
  const TrainResult r = run.run();
  const RunReport report = run.finish(r);
  if (run.rank() != 0) return;
  if (report.trace_parts > 0)
    std::fprintf(stderr, "trace: %s (%d rank(s); open in https://ui.perfetto.dev or chrome://tracing)\n",
                 out.trace.c_str(), report.trace_parts);
  const nlohmann::json summary = run.summary(r, report);
  if (!out.quiet) {
    print_phase_table(report.phases, r.step_seconds_mean, r.virtual_time);
    print_cc_hardware(summary.at("cc_hardware"));
    if (const double sm = summary.value("sm_wait_s_per_step", 0.0); sm > 0)
      std::printf(
          "of which backward's kernels waiting for fast's AES-GCM kernels on the GPU's SMs: %.3f ms/step "
          "(comm_exposed)\n",
          sm * 1e3);
  }
  print_result(d, r, report, out.quiet);
  if (!out.summary.empty()) write_summary(out.summary, summary);
}

}  // namespace

void register_train(CLI::App& app, RunServices services) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model (one rank, or data-parallel under mpirun)");
  add_train_options(cmd, *opts);
  cmd->callback([opts, cmd, services] { train_command(opts, cmd->count("--key-file") > 0, services); });
}

void train_command(const std::shared_ptr<const TrainOptions>& opts, bool key_file_given,
                   const RunServices& services) {
  if (opts->parallel.ranks_per_process == 1) return run_train(*opts, key_file_given, services);
  RunServices shared = services;
  shared.prices = std::make_shared<AlgoPrices>();  // this run's ranks price each bucket size once
  run_virtual_ranks(
      opts->parallel.ranks_per_process, shared,
      // By value: a failed rank's peers may outlive this call (run_virtual_ranks).
      [opts, key_file_given](const RunServices& seat) { run_train(*opts, key_file_given, seat); });
}

}  // namespace tt::cli
