// The opaque data of an NVIDIA GPU's SPDM MEASUREMENTS response: what the driver and firmware report
// about themselves beside the measurement blocks (driver and VBIOS versions, chip and board SKUs, the
// firmware id, the NVDEC and PCIe protection status, ...), signed with the rest of the response.
//
// The layout is a list of fields, each type (2 bytes, LE) | size (2 bytes, LE) | value (size bytes);
// the type numbers are NVIDIA's (those of its attestation SDK and local verifier). A field type this
// verifier does not know is kept and printed as hex, never refused: the signature covers it anyway.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tee/bytes.h"

namespace tt::tee::evidence {

struct OpaqueField {
  std::uint16_t type = 0;
  std::vector<std::uint8_t> value;
};

// Throws InputError naming the field that runs past the end.
std::vector<OpaqueField> parse_opaque_data(ByteView opaque);

// "DRIVER_VERSION", "VBIOS_VERSION", ..., or "UNKNOWN_<n>".
std::string opaque_field_name(std::uint16_t type);
// The value as a student reads it: text for strings, a version for VBIOS, numbers for counters and
// flags, hex for the rest. Never prints control characters from the (untrusted) value.
std::string opaque_field_text(const OpaqueField& field);

// The driver version ("590.12") and the VBIOS version ("96.00.a5.00.01", as NVIDIA's RIMs name it,
// compared case-insensitively); nullopt when the evidence has no such field.
std::optional<std::string> driver_version(const std::vector<OpaqueField>& fields);
std::optional<std::string> vbios_version(const std::vector<OpaqueField>& fields);
// Whether the NVDEC0 engine is reported disabled (0x55): NVIDIA's verifier then skips the golden
// value of measurement index 35 (tee/evidence/rim.h).
bool nvdec0_disabled(const std::vector<OpaqueField>& fields);

}  // namespace tt::tee::evidence
