// Each CLI command registers itself as a subcommand; its callback does the work and throws on error.
#pragma once
#include <CLI/CLI.hpp>

#include "engine/run/run_services.h"

namespace tt::cli {

void register_models(CLI::App& app);
void register_prepare_text(CLI::App& app);
// `services`: main's start-up watchdog and failure notices, which the commands that run a job of
// ranks lend their run (engine/run/run_services.h).
void register_train(CLI::App& app, RunServices services);
void register_runs(CLI::App& app, RunServices services);  // cmd_runs.cpp: many trainings, one process
void register_eval(CLI::App& app);
void register_sample(CLI::App& app);
void register_bench(CLI::App& app, RunServices services);  // bench allreduce's run
void register_bench_host_profile(CLI::App* bench);         // cmd_bench_profile.cpp
void register_bench_emulated_step(CLI::App* bench);        // cmd_bench_profile.cpp
void register_bench_conv(CLI::App* bench);                 // cmd_bench_conv.cpp
void register_attest(CLI::App& app);
void register_provision(CLI::App& app);
void register_verify_evidence(CLI::App& app);
void register_gather_evidence(CLI::App& app);
void register_attestation_policy(CLI::App& app);  // cmd_attestation_policy.cpp
void register_keys(CLI::App& app);
void register_ckpt(CLI::App& app);
void register_model_cmd(CLI::App& app);

}  // namespace tt::cli
