// describe(GpuEvidence): NVIDIA evidence field by field, as `teetrain verify-evidence` prints it.
#include <cstdio>

#include "tee/evidence/nvidia_verify.h"

namespace tt::tee::evidence {
namespace {

std::string line(const char* label, const std::string& value) {
  std::array<char, 24> pad{};
  std::snprintf(pad.data(), pad.size(), "  %-20s", label);
  return std::string(pad.data()) + value + "\n";
}

std::string hex_byte(std::uint8_t b) {
  return "0x" + to_hex(ByteView(&b, 1));
}

std::string describe_chain(const GpuEvidence& gpu) {
  std::string out =
      line("certificate chain", std::to_string(gpu.chain.size()) + " certificates, leaf first, as sent");
  for (std::size_t i = 0; i < gpu.chain.size(); ++i)
    out += "    [" + std::to_string(i) + "] " + gpu.chain[i].describe() + "\n";
  return out;
}

std::string describe_nonces(const GpuEvidence& gpu) {
  const MeasurementRequest& rq = gpu.transcript.request;
  std::string out = line(
      "GET_MEASUREMENTS",
      "SPDM " + std::to_string(rq.version >> 4) + "." + std::to_string(rq.version & 0xf) + ", attributes " +
          hex_byte(rq.attributes) + " (signature requested), operation " + hex_byte(rq.operation) +
          (rq.operation == 0xff ? " (every block)" : "") + ", slot " + std::to_string(rq.slot_id));
  out += line("verifier nonce", to_hex(rq.nonce) + "  (signed: inside the request)");
  if (gpu.stated_nonce)
    out += line("file's nonce field", to_hex(*gpu.stated_nonce) + "  (NOT signed: a copy)");
  out += line("responder nonce", to_hex(gpu.transcript.response.nonce) + "  (the GPU's own)");
  return out;
}

std::string describe_blocks(const GpuEvidence& gpu) {
  const auto& blocks = gpu.transcript.response.blocks;
  std::string out =
      line("measurement blocks", std::to_string(blocks.size()) + " (index: what, then the value)");
  for (const MeasurementBlock& b : blocks) {
    std::array<char, 16> idx{};
    std::snprintf(idx.data(), idx.size(), "    [%3d] ", b.index);
    out += idx.data() + dmtf_value_type_text(b.value_type) + ", " + std::to_string(b.value.size()) +
           " bytes: " + to_hex(b.value) + "\n";
  }
  return out;
}

std::string describe_opaque(const GpuEvidence& gpu) {
  std::string out = line("driver version", driver_version(gpu.opaque).value_or("(not reported)"));
  out += line("VBIOS version", vbios_version(gpu.opaque).value_or("(not reported)"));
  out += line("opaque data", std::to_string(gpu.opaque.size()) + " fields (type: name = value)");
  for (const OpaqueField& f : gpu.opaque) {
    std::array<char, 48> name{};
    std::snprintf(name.data(), name.size(), "    [%3u] %-24s = ", static_cast<unsigned>(f.type),
                  opaque_field_name(f.type).c_str());
    out += name.data() + opaque_field_text(f) + "\n";
  }
  return out;
}

}  // namespace

std::string describe(const GpuEvidence& gpu) {
  std::string out = "NVIDIA GPU evidence: " + gpu.source + " (" + gpu.arch + ", " +
                    std::to_string(gpu.report.size()) + "-byte attestation report)\n";
  out += describe_chain(gpu);
  out += describe_nonces(gpu);
  out += describe_blocks(gpu);
  out += describe_opaque(gpu);
  out += line("signature", std::to_string(gpu.transcript.response.signature.size()) +
                               " bytes: ECDSA P-384 (r || s) over SHA-384 of the request and response");
  return out;
}

}  // namespace tt::tee::evidence
