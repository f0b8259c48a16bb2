// `teetrain models`: the presets, their parameter counts and the memory a training step needs on each
// rank (--ranks P --shard S: what sharding leaves each of P ranks).
#include <cstdio>
#include <memory>

#include "engine/state_memory.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {

namespace {

struct ModelsFlags {
  int ranks = 1;
  ShardStage shard = ShardStage::None;
};

}  // namespace

void register_models(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List model presets with parameter counts and training memory");
  auto flags = std::make_shared<ModelsFlags>();
  cmd->add_option("--ranks", flags->ranks, "Data-parallel ranks the memory is shared among")
      ->check(positive())
      ->capture_default_str();
  add_enum_option(
      cmd, "--shard", flags->shard,
      "What each rank keeps (as train --shard): none (DDP), optimizer (ZeRO-1), gradients (ZeRO-2), "
      "params (ZeRO-3)");
  cmd->callback([flags] {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    std::printf("%-13s %-50s %14s %12s %12s %12s %12s  %s\n", "preset", "shape", "parameters", "params/rank",
                "grads/rank", "optim/rank", "train mem*", "note");
    for (const PresetRow& r : list_presets()) {
      const StateBytes b = state_bytes_per_rank(r.params, flags->shard, flags->ranks);
      std::printf("%-13s %-50s %14zu %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB  %s\n", r.name.c_str(),
                  r.shape.c_str(), r.params, b.params / kGiB, b.grads / kGiB, b.optimizer / kGiB,
                  b.total() / kGiB, r.note.c_str());
    }
    std::printf(
        "* per rank of %d with --shard %s: parameters + gradients + AdamW state (float32), before "
        "activations; `teetrain train` prints the total with activations for its batch shape.\n",
        flags->ranks, name(flags->shard));
  });
}

}  // namespace tt::cli
