// `teetrain model`: the scaling model (study/scaling_model.h). Calibrates per-message, link and
// crypto costs from a reproduce directory, prints predicted versus measured step times, and projects
// the step time of a model to P = 8 ... 1024 ranks.
#include <cstdio>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "study/scaling_model.h"
#include "tools/cli/commands.h"
#include "tools/cli/json_file.h"
#include "tools/cli/validators.h"

namespace tt::cli {

// Declared here rather than in commands.h (owned by the CLI's wiring); main.cpp calls it.
void register_model_cmd(CLI::App& app);

namespace {

void print_costs(const nlohmann::json& report) {
  std::printf(
      "calibrated costs per TEE variant (fitted on P > 1 runs; 0 = not identifiable from these runs)\n");
  std::printf("  %-28s %6s %12s %9s %12s %12s %12s %12s %10s\n", "variant", "runs", "alpha us", "tail ms",
              "link GB/s", "crypto GB/s", "seal GB/s*", "open GB/s*", "xfer us**");
  for (const auto& [v, c] : report["costs"].items()) {
    std::printf("  %-28s %6d %12.2f %9.2f %12.3f %12.3f %12.3f %12.3f %10.0f\n", v.c_str(),
                c["points"].get<int>(), c["alpha_us"].get<double>(), c["tail_ms"].get<double>(),
                c["link_gbs"].get<double>(), c["crypto_gbs"].get<double>(),
                c["seal_gbs_measured"].get<double>(), c["open_gbs_measured"].get<double>(),
                c["transfer_us"].get<double>());
  }
  std::printf(
      "  (* measured: bytes / phase seconds summed over crypto threads; ** --cc-transfer-us of the runs, a "
      "known cost per bounce-buffer crossing, not fitted)\n");
}

void print_points(const nlohmann::json& report) {
  std::printf("\npredicted vs measured step time\n");
  std::printf("  %-12s %-28s %3s %8s %7s %11s %11s %8s\n", "model", "variant", "P", "bucketMB", "overlap",
              "measured s", "predicted s", "error");
  for (const auto& p : report["points"]) {
    std::printf("  %-12s %-28s %3d %8.1f %7s %11.4f %11.4f %+7.1f%%\n", p["model"].get<std::string>().c_str(),
                p["variant"].get<std::string>().c_str(), p["P"].get<int>(), p["bucket_mb"].get<double>(),
                p["overlap"].get<bool>() ? "on" : "off", p["measured_s"].get<double>(),
                p["predicted_s"].get<double>(), 100 * p["error"].get<double>());
  }
  std::printf("  mean |error| %.1f%% over %zu runs\n", 100 * report["mean_abs_error"].get<double>(),
              report["points"].size());
  const int fit_max_p = report["fit_max_p"].get<int>();
  if (fit_max_p <= 0) return;
  const nlohmann::json& fit = report["fit_error"];
  const nlohmann::json& held = report["held_out_error"];
  std::printf("  fit set (P <= %d): mean |error| %.1f%%, max %.1f%% over %d runs\n", fit_max_p,
              100 * fit["mean_abs"].get<double>(), 100 * fit["max_abs"].get<double>(),
              fit["runs"].get<int>());
  std::printf("  held out (P > %d): mean |error| %.1f%%, max %.1f%% over %d runs\n", fit_max_p,
              100 * held["mean_abs"].get<double>(), 100 * held["max_abs"].get<double>(),
              held["runs"].get<int>());
}

// Step seconds per P and variant; a TEE variant also shows its slowdown versus the plaintext one.
void print_projection(const nlohmann::json& report) {
  const nlohmann::json& pr = report["projection"];
  std::printf("\nprojection: %s, bucket %.0f MiB, overlap %s, compute %.4f s/step (measured at P=%d)\n",
              pr["model"].get<std::string>().c_str(), pr["bucket_mb"].get<double>(),
              pr["overlap"].get<bool>() ? "on" : "off", pr["compute_s"].get<double>(),
              pr["compute_P"].get<int>());
  std::printf("  %d buckets: %s\n", pr["buckets"].get<int>(), pr["bucket_plan"].get<std::string>().c_str());
  std::printf("  %6s", "P");
  for (const auto& v : pr["variants"]) std::printf(" %14s", v.get<std::string>().c_str());
  const bool have_off = report["costs"].contains("off");
  std::printf("   (step seconds%s)\n", have_off ? "; xN = slowdown vs off" : "");
  for (const auto& row : pr["rows"]) {
    double off = 0;
    for (const auto& v : pr["variants"]) {
      if (!report["costs"][v.get<std::string>()]["tee_on"].get<bool>()) off = row[v.get<std::string>()];
    }
    std::printf("  %6d", row["P"].get<int>());
    for (const auto& v : pr["variants"]) {
      const double s = row[v.get<std::string>()].get<double>();
      if (off > 0 && report["costs"][v.get<std::string>()]["tee_on"].get<bool>()) {
        std::printf(" %7.3f (x%4.1f)", s, s / off);
      } else {
        std::printf(" %14.3f", s);
      }
    }
    std::printf("\n");
  }
  if (!pr["not_projected"].empty()) {
    std::string names;
    for (const auto& v : pr["not_projected"]) names += (names.empty() ? "" : ", ") + v.get<std::string>();
    std::printf("  not projected (fewer than 3 multi-rank runs: their costs are not identifiable): %s\n",
                names.c_str());
  }
}

// Each variant's step per sharding stage, side by side (Note [Stage pricing], study/scaling_model.h).
void print_stages(const nlohmann::json& report) {
  const nlohmann::json& pr = report["projection"];
  std::printf(
      "\nstages: step seconds per sharding stage, same costs and bucket plan (--shard none, "
      "optimizer|gradients, params)\n  %6s %-28s",
      "P", "variant");
  for (const study::ShardPriceName& s : study::kShardPrices) std::printf(" %10s", s.name);
  std::printf("\n");
  for (const auto& row : pr["stages"]) {
    std::printf("  %6d %-28s", row["P"].get<int>(), row["variant"].get<std::string>().c_str());
    for (const study::ShardPriceName& s : study::kShardPrices)
      std::printf(" %10.3f", row[s.name].get<double>());
    std::printf("\n");
  }
}

}  // namespace

void register_model_cmd(CLI::App& app) {
  auto q = std::make_shared<study::ModelQuery>();
  auto json_out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("model",
                                 "Scaling model: calibrate from measured runs, check, project to many ranks");
  cmd->add_option("--runs", q->runs, "A reproduce directory (runs.jsonl), a .jsonl file or a --summary .json")
      ->required();
  cmd->add_option("--model", q->model, "Model to project (default: the largest measured)");
  cmd->add_option("--bucket-mb", q->bucket_mb, "Bucket cap of the projection in MiB (0 = whole model)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_on_off_option(cmd, "--overlap", q->overlap, "Overlap all-reduce with backward in the projection");
  cmd->add_option("--tee", q->variants, "TEE variants to project (default: all measured), e.g. off,cc,fast")
      ->delimiter(',');
  cmd->add_option("--ranks", q->ranks, "Rank counts to project")->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--fit-max-p", q->fit_max_p,
                  "Fit on runs with P <= N only and report the others as held out (0 = fit on all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", *json_out, "Also write the report as JSON to FILE");
  cmd->callback([q, json_out] {
    const nlohmann::json report = study::run_scaling_model(*q);
    print_costs(report);
    print_points(report);
    print_projection(report);
    print_stages(report);
    if (!json_out->empty()) write_json_file("--json", *json_out, report);
  });
}

}  // namespace tt::cli
