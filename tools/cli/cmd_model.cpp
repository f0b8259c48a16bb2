// `teetrain model`: the scaling model (tools/cli/scaling_model.h). Calibrates per-message, link and
// crypto costs from a reproduce directory, prints predicted versus measured step times, and projects
// the step time of a model to P = 8 ... 1024 ranks.
#include <cstdio>
#include <fstream>
#include <memory>

#include "engine/core/error.h"
#include "tools/cli/commands.h"
#include "tools/cli/scaling_model.h"

namespace tt::cli {

// Declared here rather than in commands.h (owned by the CLI's wiring); main.cpp calls it.
void register_model_cmd(CLI::App& app);

void register_model_cmd(CLI::App& app) {
  auto q = std::make_shared<ModelQuery>();
  auto json_out = std::make_shared<std::string>();
  auto overlap = std::make_shared<std::string>("on");
  auto* cmd = app.add_subcommand("model",
                                 "Scaling model: calibrate from measured runs, check, project to many ranks");
  cmd->add_option("--runs", q->runs, "A reproduce directory (runs.jsonl), a .jsonl file or a --summary .json")
      ->required();
  cmd->add_option("--model", q->model, "Model to project (default: the largest measured)");
  cmd->add_option("--bucket-mb", q->bucket_mb, "Bucket cap of the projection in MiB (0 = whole model)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--overlap", *overlap, "Overlap all-reduce with backward in the projection")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--tee", q->variants, "TEE variants to project (default: all measured), e.g. off,cc,fast")
      ->delimiter(',');
  cmd->add_option("--ranks", q->ranks, "Rank counts to project")->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--json", *json_out, "Also write the report as JSON to FILE");
  cmd->callback([q, json_out, overlap] {
    q->overlap = *overlap == "on";
    const nlohmann::json report = run_scaling_model(*q, /*print=*/true);
    if (!json_out->empty()) {
      std::ofstream f(*json_out);
      if (!f) throw InputError("--json " + *json_out + ": cannot open for writing");
      f << report.dump(2) << '\n';
    }
  });
}

}  // namespace tt::cli
