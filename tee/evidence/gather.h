// Gathering REAL attestation evidence on confidential hardware (`teetrain gather-evidence`): the
// prover's half of what `verify-evidence` checks. Three sources, each asked to sign a challenge:
//
//   tdx, snp  the Linux kernel's configfs-tsm report interface (tee/evidence/tsm_report.h): an Intel
//             TDX quote or an AMD SEV-SNP report whose 64-byte REPORTDATA is the challenge;
//   gpu       NVIDIA's NVML, loaded at run time (tee/evidence/nvml_gather.h): every GPU's SPDM
//             measurement report answering the 32-byte challenge, with its certificate chain, written
//             as the attestation SDK's evidence JSON (tee/evidence/nvidia_evidence.h);
//   auto      the first of these the machine has (the CPU TEE first: its quote is the one that binds
//             the training process's key, docs/design.md §12).
//
// Where a source is absent the error says what is missing and what to do instead (InputError, exit 2):
// on ordinary machines the published samples are verified with verify-evidence, and training keeps
// the emulated vendor. Nothing here touches the training handshake, which stays emulated.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tee/identity/kx_binding.h"

namespace tt::tee::evidence {

enum class EvidenceSource { Tdx, Snp, Gpu, Auto };

// "tdx", "snp", "gpu", "auto", and back.
const char* source_name(EvidenceSource s);
std::optional<EvidenceSource> source_from_name(std::string_view name);

inline constexpr const char* kDefaultTsmDir = "/sys/kernel/config/tsm/report";
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct GatherRequest {
  EvidenceSource source = EvidenceSource::Auto;
  // The challenge as REPORTDATA: a 32-byte challenge is followed by 32 zero bytes. A GPU signs only
  // the first 32 bytes, so for it the second half must be zero.
  ReportData report_data{};
  std::filesystem::path tsm_dir = kDefaultTsmDir;
  // A bound on the whole request: the kernel's read of a quote waits for a quote service outside the
  // guest, which may never answer.
  std::chrono::seconds timeout{60};
};

struct GatheredEvidence {
  EvidenceSource source = EvidenceSource::Auto;  // the one that answered: Tdx, Snp or Gpu
  std::string origin;                            // where it came from, in words, for the output
  std::vector<std::uint8_t> evidence;            // the TDX quote, the SNP report, or the SDK's JSON
  std::vector<std::uint8_t> certificates;        // SNP's certificate table (configfs-tsm auxblob), if any
  std::string what;                              // what `evidence` is, e.g. "an Intel TDX quote"
  std::vector<std::string> notes;                // what was not checked here, cleanup that failed
};

// Asks the requested source (or the first available one) to sign the challenge. Throws InputError
// when the source is absent (naming what is missing and what to do instead), RunError when it is
// present but fails or times out, IntegrityError when what it returned does not answer the challenge.
GatheredEvidence gather_evidence(const GatherRequest& request);

// The advice appended to every "absent hardware" message.
std::string no_hardware_advice();

}  // namespace tt::tee::evidence
