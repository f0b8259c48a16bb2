#include "tee/evidence/spdm.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "tee/byte_reader.h"

namespace tt::tee::evidence {
namespace {

constexpr std::uint8_t kSpdm11 = 0x11;
constexpr std::uint8_t kGetMeasurements = 0xE0;
constexpr std::uint8_t kMeasurements = 0x60;
constexpr std::uint8_t kDmtfSpecification = 0x01;

std::string hex_byte(std::uint8_t b) {
  return "0x" + to_hex(ByteView(&b, 1));
}

void expect_byte(std::uint8_t got, std::uint8_t want, const std::string& what, const char* field) {
  if (got != want)
    throw InputError(what + ": " + field + " is " + hex_byte(got) + ", expected " + hex_byte(want) +
                     " (this verifier reads SPDM 1.1 measurement reports)");
}

MeasurementRequest parse_request(ByteReader& in) {
  MeasurementRequest r;
  r.version = in.u8("SPDMVersion");
  expect_byte(r.version, kSpdm11, in.what(), "SPDMVersion");
  expect_byte(in.u8("RequestResponseCode"), kGetMeasurements, in.what(), "RequestResponseCode");
  r.attributes = in.u8("Param1");
  r.operation = in.u8("Param2");
  // Without the signature bit there is no nonce and nothing signed: nothing to verify.
  if ((r.attributes & 0x01) == 0)
    throw InputError(in.what() + ": Param1 does not request a signature (an unsigned report proves nothing)");
  const ByteView nonce = in.take(kSpdmNonceBytes, "Nonce");
  std::copy(nonce.begin(), nonce.end(), r.nonce.begin());
  r.slot_id = in.u8("SlotIDParam");
  return r;
}

MeasurementBlock parse_block(ByteReader& in) {
  MeasurementBlock b;
  b.index = in.u8("measurement block Index");
  b.specification = in.u8("MeasurementSpecification");
  const std::uint16_t size = in.u16("MeasurementSize");
  ByteReader m(in.take(size, "Measurement"), in.what() + ": measurement block " + std::to_string(b.index));
  if (b.specification != kDmtfSpecification)
    throw InputError(m.what() + ": MeasurementSpecification " + hex_byte(b.specification) +
                     " is not the DMTF format");
  b.value_type = m.u8("DMTFSpecMeasurementValueType");
  const std::uint16_t value_size = m.u16("DMTFSpecMeasurementValueSize");
  const ByteView value = m.take(value_size, "DMTFSpecMeasurementValue");
  if (m.remaining() != 0)
    throw InputError(m.what() + ": MeasurementSize " + std::to_string(size) + " exceeds its value by " +
                     std::to_string(m.remaining()) + " bytes");
  b.value.assign(value.begin(), value.end());
  return b;
}

std::vector<MeasurementBlock> parse_record(ByteView record, std::size_t count, const std::string& what) {
  ByteReader in(record, what + ": MeasurementRecord");
  std::vector<MeasurementBlock> blocks;
  while (in.remaining() > 0) {
    MeasurementBlock b = parse_block(in);
    const bool seen = std::any_of(blocks.begin(), blocks.end(),
                                  [&](const MeasurementBlock& o) { return o.index == b.index; });
    if (seen) throw InputError(in.what() + ": measurement block index " + std::to_string(b.index) + " twice");
    blocks.push_back(std::move(b));
  }
  if (blocks.size() != count)
    throw InputError(what + ": NumberOfBlocks says " + std::to_string(count) + ", the record holds " +
                     std::to_string(blocks.size()));
  return blocks;
}

MeasurementResponse parse_response(ByteReader& in, std::size_t signature_bytes) {
  MeasurementResponse r;
  r.version = in.u8("SPDMVersion");
  expect_byte(r.version, kSpdm11, in.what(), "SPDMVersion");
  expect_byte(in.u8("RequestResponseCode"), kMeasurements, in.what(), "RequestResponseCode");
  r.param1 = in.u8("Param1");
  r.param2 = in.u8("Param2");
  const std::uint8_t count = in.u8("NumberOfBlocks");
  const std::uint32_t record_length = in.u24("MeasurementRecordLength");
  r.blocks = parse_record(in.take(record_length, "MeasurementRecord"), count, in.what());
  const ByteView nonce = in.take(kSpdmNonceBytes, "Nonce");
  std::copy(nonce.begin(), nonce.end(), r.nonce.begin());
  const std::uint16_t opaque_length = in.u16("OpaqueLength");
  const ByteView opaque = in.take(opaque_length, "OpaqueData");
  r.opaque.assign(opaque.begin(), opaque.end());
  const ByteView signature = in.take(signature_bytes, "Signature");
  r.signature.assign(signature.begin(), signature.end());
  if (in.remaining() != 0)
    throw InputError(in.what() + ": " + std::to_string(in.remaining()) + " bytes after the signature");
  return r;
}

}  // namespace

MeasurementTranscript parse_measurement_transcript(ByteView report, std::size_t signature_bytes) {
  MeasurementTranscript t;
  ByteReader request(report, "SPDM GET_MEASUREMENTS request");
  t.request = parse_request(request);
  ByteReader response(report.subspan(request.offset()), "SPDM MEASUREMENTS response");
  t.response = parse_response(response, signature_bytes);
  const std::size_t signed_length = report.size() - signature_bytes;
  t.signed_bytes.assign(report.begin(), report.begin() + static_cast<std::ptrdiff_t>(signed_length));
  return t;
}

std::string dmtf_value_type_text(std::uint8_t value_type) {
  static constexpr std::array<const char*, 8> kKinds = {
      "immutable ROM",        "mutable firmware", "hardware configuration",   "firmware configuration",
      "measurement manifest", "device mode",      "mutable firmware version", "security version number"};
  const std::uint8_t kind = value_type & 0x7f;
  const std::string what = kind < kKinds.size() ? kKinds[kind] : "type " + hex_byte(kind);
  return ((value_type & 0x80) != 0 ? "raw bit stream of " : "digest of ") + what;
}

}  // namespace tt::tee::evidence
