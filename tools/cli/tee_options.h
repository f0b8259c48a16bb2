// TEE-mode flags of `teetrain train` and `bench allreduce`, parsed into engine/run/train_options.h's
// TeeOptions. `cc` emulates H100 confidential computing as Lee et al. measured it; `fast` is our
// TEE-aware design. Every optimization of fast is also a switch of its own so an ablation can add
// them one at a time.
#pragma once
#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/run/train_options.h"

namespace tt::cli {

void add_tee_options(CLI::App* cmd, TeeOptions& o);
// The attestation flags alone (train and bench allreduce add them with the TEE group; attest too).
void add_trust_options(CLI::App* g, TrustOptions& t);
// --adversary SPEC (comm/adversary/adversary_spec.h), parsed into `out` (a bad spec is an InputError: exit
// 2).
void add_adversary_option(CLI::App* g, std::optional<comm::AdversarySpec>& out);

// --nonce HEX: the verifier's 32-byte challenge (64 hex digits); nullopt for an empty string, InputError
// (exit 2) for anything else. `attest` and `verify-evidence` read it alike.
std::optional<std::array<std::uint8_t, 32>> parse_nonce_hex(const std::string& hex);
// 32 bytes as 64 hex digits given with `flag` (e.g. --verifier-nonce, --kx-public); InputError naming
// the flag and `what` it holds otherwise.
std::array<std::uint8_t, 32> parse_hex32(const std::string& hex, const std::string& flag,
                                         const std::string& what);
// --nonce HEX for a CPU TEE's 64-byte REPORTDATA: 64 hex digits (a challenge, followed by 32 zero
// bytes: docs/design.md §12) or all 128; nullopt for an empty string, InputError for anything else.
std::optional<std::array<std::uint8_t, 64>> parse_report_data_hex(const std::string& hex);

}  // namespace tt::cli
