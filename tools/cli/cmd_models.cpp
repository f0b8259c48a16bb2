// `teetrain models`: the presets, their parameter counts and the memory a training step needs on each
// rank (--ranks P --shard S: what sharding leaves each of P ranks; --batch B --seq T: with one batch's
// activations), and whether an emulated GPU holds it (engine/state_memory.h).
#include <cstdio>
#include <memory>
#include <string>

#include "engine/run/platform_profile.h"
#include "engine/state_memory.h"
#include "tools/cli/commands.h"
#include "tools/cli/model_flags.h"
#include "tools/cli/validators.h"

namespace tt::cli {

namespace {

struct ModelsFlags {
  std::string model;  // empty: every preset
  int ranks = 1;
  ShardStage shard = ShardStage::None;
  int batch = 0;  // 0: no activations counted
  int seq = 1024;
  std::string gpu = "h100";
  GpuBaseline baseline = GpuBaseline::Teetrain;  // Note [Fused attention baseline]
};

ModelOptions preset(const std::string& name) {
  ModelOptions o;
  o.name = name;
  return o;
}

void print_models(const ModelsFlags& f) {
  if (!f.model.empty()) model_family(preset(f.model));  // an unknown name: exit 2, naming every preset
  const GpuSpec gpu = resolve_gpu_spec(f.gpu);
  char fits_head[48];
  std::snprintf(fits_head, sizeof fits_head, "fits %s", gpu.name.c_str());
  std::printf("%-13s %-50s %14s %12s %12s %12s %12s %12s %12s  %-9s  %s\n", "preset", "shape", "parameters",
              "params/rank", "grads/rank", "optim/rank", "acts/rank", "gathered/rank", "total/rank*",
              fits_head, "note");
  for (const PresetRow& r : list_presets()) {
    if (!f.model.empty() && r.name != f.model) continue;
    ModelMemory m = for_baseline(model_memory(preset(r.name), f.batch > 0 ? f.batch : 1, f.seq), f.baseline);
    if (f.batch == 0) m.activation_bytes = 0;
    const StateBytes b = state_bytes_per_rank(m, f.shard, f.ranks);
    const char* fits = gpu.memory_gib <= 0 ? "-" : b.total() <= gpu.memory_gib * kGiB ? "yes" : "no";
    std::printf("%-13s %-50s %14zu %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB  %-9s  %s\n",
                r.name.c_str(), r.shape.c_str(), r.params, b.params / kGiB, b.grads / kGiB,
                b.optimizer / kGiB, b.activations / kGiB, b.gathered / kGiB, b.total() / kGiB, fits,
                r.note.c_str());
  }
  const std::string acts = f.batch > 0 ? "activations of --batch " + std::to_string(f.batch) + " --seq " +
                                             std::to_string(f.seq) + " (images: --batch only)"
                                       : "no activations (give --batch B --seq T to add them)";
  std::printf(
      "* per rank of %d with --shard %s (%s): parameters + gradients + AdamW state (float32), %s, and with "
      "--shard params two whole units (a block or stage, and the next, prefetched); an emulated %s holds "
      "%.0f GiB, and `teetrain train --compute emulate` refuses a run that needs more.\n",
      f.ranks, name(f.shard), stage_label(f.shard), acts.c_str(), gpu.name.c_str(), gpu.memory_gib);
}

}  // namespace

void register_models(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List model presets with parameter counts and training memory");
  auto flags = std::make_shared<ModelsFlags>();
  cmd->add_option("--model", flags->model, "Only this preset");
  cmd->add_option("--ranks", flags->ranks, "Data-parallel ranks the memory is shared among")
      ->check(positive())
      ->capture_default_str();
  add_enum_option(cmd, "--shard", flags->shard,
                  "What each rank keeps (as train --shard): none (DDP), optimizer (ZeRO-1), gradients "
                  "(ZeRO-2), params (ZeRO-3)");
  cmd->add_option("--batch", flags->batch, "Sequences (or images) per rank whose activations count (0: none)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--seq", flags->seq, "Tokens per sequence for the activations")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--gpu", flags->gpu, "Emulated GPU (or platform profile) whose memory the total is held to")
      ->capture_default_str();
  add_enum_option(
      cmd, "--gpu-baseline", flags->baseline,
      "The step's activations as train --gpu-baseline models them: teetrain (attention's (B, NH, T, "
      "T) tensors kept) or fused-attention (none kept)");
  cmd->callback([flags] { print_models(*flags); });
}

}  // namespace tt::cli
