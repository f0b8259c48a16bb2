// `teetrain models`: the presets, their parameter counts and the memory a training step needs.
#include <cstdio>

#include "tools/cli/commands.h"
#include "tools/cli/model_flags.h"

namespace tt::cli {

void register_models(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List model presets with parameter counts and training memory");
  cmd->callback([] {
    std::printf("%-13s %-50s %14s %12s  %s\n", "preset", "shape", "parameters", "train mem*", "note");
    for (const PresetRow& r : list_presets()) {
      // Parameters, gradients and AdamW's m and v: 4 float32 copies of the parameters.
      const double gib = static_cast<double>(r.params) * 4.0 * 4.0 / (1024.0 * 1024.0 * 1024.0);
      std::printf("%-13s %-50s %14zu %9.2f GiB  %s\n", r.name.c_str(), r.shape.c_str(), r.params, gib,
                  r.note.c_str());
    }
    std::printf(
        "* parameters + gradients + AdamW state (float32), before activations; "
        "`teetrain train` prints the total with activations for its batch shape.\n");
  });
}

}  // namespace tt::cli
