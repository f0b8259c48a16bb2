// teetrain: the command-line entry point. Library code throws; this is the only place that turns
// errors into exit codes: 2 = bad input, 3 = integrity failure (tampering), 1 = anything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "engine/core/error.h"
#include "tee/errors.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "teetrain: data-parallel training with a built-in TEE (confidential computing) mode.\n"
      "Run `teetrain <command> --help` for the options of each command. Exit codes: 0 ok, 1 run failure,\n"
      "2 bad input (file, flag or number), 3 integrity failure (a sealed message or file failed to open)."};
  app.require_subcommand(1);
  // A later flag overrides an earlier one (scripts append overrides to a base command line).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", "teetrain 0.1.0");
  tt::cli::register_models(app);
  tt::cli::register_prepare_text(app);
  tt::cli::register_train(app);
  tt::cli::register_sample(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const tt::InputError& e) {
    std::fprintf(stderr, "teetrain: error: %s\n", e.what());
    return 2;
  } catch (const tt::tee::IntegrityError& e) {
    std::fprintf(stderr, "teetrain: INTEGRITY FAILURE: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "teetrain: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
