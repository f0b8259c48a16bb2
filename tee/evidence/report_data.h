// The verifier's challenge in the 64 bytes a CPU TEE signs for its guest: an Intel TDX quote's
// REPORTDATA, an AMD SEV-SNP report's REPORT_DATA. Both are compared the same way (docs/design.md §12).
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include "tee/bytes.h"
#include "tee/evidence/nvidia_verify.h"

namespace tt::tee::evidence {

inline constexpr std::size_t kReportDataBytes = 64;
using ReportData = std::array<std::uint8_t, kReportDataBytes>;

// The nonce check: `signed_data` (the evidence's field named `field`) is exactly `challenge`; nullopt:
// freshness not checked, and the outcome says so.
CheckOutcome check_report_data(ByteView signed_data, const std::optional<ReportData>& challenge,
                               const char* field);

}  // namespace tt::tee::evidence
