// SPDM 1.1 (DMTF DSP0274) measurement messages, as an NVIDIA GPU's attestation report carries them:
// the verifier's GET_MEASUREMENTS request followed by the device's signed MEASUREMENTS response.
//
//   GET_MEASUREMENTS  version 0x11 | code 0xE0 | param1 (bit 0: signature requested) | param2 (0xFF:
//                     every block) | nonce (32, the verifier's challenge) | slot id (1)       37 bytes
//   MEASUREMENTS      version 0x11 | code 0x60 | param1 | param2 (slot id) | number of blocks (1) |
//                     record length (3, LE) | measurement record | nonce (32, the device's) |
//                     opaque length (2, LE) | opaque data | signature
//   measurement block index (1) | specification (1, bit 0: DMTF) | size (2, LE) | DMTF value type (1) |
//                     value size (2, LE) | value
//
// Note [SPDM measurement transcript]: in SPDM 1.1 the device signs the transcript of the exchange,
// the request and the response up to the signature: signature = ECDSA-P384(SHA-384(request ||
// response without its signature)). Because the request is inside the signed bytes, the verifier's
// nonce is bound to the measurements; the nonce check then only has to compare the request's nonce
// with the one the verifier issued. NVIDIA's verifiers sign and check exactly these bytes (the report
// minus its last 96 bytes).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tee/bytes.h"

namespace tt::tee::evidence {

inline constexpr std::size_t kSpdmNonceBytes = 32;
using SpdmNonce = std::array<std::uint8_t, kSpdmNonceBytes>;

struct MeasurementRequest {
  std::uint8_t version = 0;     // 0x11: SPDM 1.1
  std::uint8_t attributes = 0;  // param1; bit 0: a signature is requested
  std::uint8_t operation = 0;   // param2; 0xFF: every measurement block
  SpdmNonce nonce{};            // the verifier's challenge
  std::uint8_t slot_id = 0;     // which certificate slot signs
};

struct MeasurementBlock {
  std::uint8_t index = 0;          // 1 .. 254
  std::uint8_t specification = 0;  // bit 0: the DMTF measurement format
  std::uint8_t value_type = 0;     // bit 7: raw bit stream (else a digest); bits 6..0: what is measured
  std::vector<std::uint8_t> value;
};

struct MeasurementResponse {
  std::uint8_t version = 0;
  std::uint8_t param1 = 0;
  std::uint8_t param2 = 0;
  std::vector<MeasurementBlock> blocks;  // in the order sent
  SpdmNonce nonce{};                     // the device's own nonce
  std::vector<std::uint8_t> opaque;      // vendor-defined (tee/evidence/nvidia_opaque.h)
  std::vector<std::uint8_t> signature;
};

struct MeasurementTranscript {
  MeasurementRequest request;
  MeasurementResponse response;
  std::vector<std::uint8_t> signed_bytes;  // request || response up to the signature (Note above)
};

// Parses `report` = GET_MEASUREMENTS request || MEASUREMENTS response whose signature is
// `signature_bytes` long (96 for ECDSA P-384: r || s). Checks the structure only (versions, codes,
// lengths, block count, unique indices, no trailing bytes); throws InputError naming the field.
MeasurementTranscript parse_measurement_transcript(ByteView report, std::size_t signature_bytes);

// "digest of mutable firmware", "raw bit stream of hardware configuration", ... (DSP0274 table 45).
std::string dmtf_value_type_text(std::uint8_t value_type);

}  // namespace tt::tee::evidence
