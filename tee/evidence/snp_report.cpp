#include "tee/evidence/snp_report.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "base/error.h"
#include "tee/byte_reader.h"
#include "tee/evidence/field_text.h"

namespace tt::tee::evidence {
namespace {

constexpr std::uint32_t kFirstVersion = 2;
constexpr std::uint32_t kLastVersion = 5;
constexpr std::uint32_t kEcdsaP384Sha384 = 1;
constexpr std::size_t kScalarField = 72;  // r and s, each (Note [SEV-SNP signature])

// How a field is shown; Reserved fields are read (a short report names where it ends) but not shown.
enum class Show { Number, Hex, Policy, Tcb, PlatformInfo, SignerInfo, Firmware, Cpuid, Reserved };

struct Field {
  const char* name;
  std::size_t offset;
  std::size_t size;
  Show show;
  std::uint32_t since_version = kFirstVersion;
};

// The ATTESTATION_REPORT, every byte of it, in order (AMD SEV-SNP ABI specification).
constexpr std::array<Field, 32> kFields = {{
    {"VERSION", 0x00, 4, Show::Number},
    {"GUEST_SVN", 0x04, 4, Show::Number},
    {"POLICY", 0x08, 8, Show::Policy},
    {"FAMILY_ID", 0x10, 16, Show::Hex},
    {"IMAGE_ID", 0x20, 16, Show::Hex},
    {"VMPL", 0x30, 4, Show::Number},
    {"SIGNATURE_ALGO", 0x34, 4, Show::Number},
    {"CURRENT_TCB", 0x38, 8, Show::Tcb},
    {"PLATFORM_INFO", 0x40, 8, Show::PlatformInfo},
    {"signer", 0x48, 4, Show::SignerInfo},
    {"reserved", 0x4C, 4, Show::Reserved},
    {"REPORT_DATA", 0x50, 64, Show::Hex},
    {"MEASUREMENT", 0x90, 48, Show::Hex},
    {"HOST_DATA", 0xC0, 32, Show::Hex},
    {"ID_KEY_DIGEST", 0xE0, 48, Show::Hex},
    {"AUTHOR_KEY_DIGEST", 0x110, 48, Show::Hex},
    {"REPORT_ID", 0x140, 32, Show::Hex},
    {"REPORT_ID_MA", 0x160, 32, Show::Hex},
    {"REPORTED_TCB", 0x180, 8, Show::Tcb},
    {"CPUID", 0x188, 3, Show::Cpuid, 3},
    {"reserved", 0x18B, 21, Show::Reserved},
    {"CHIP_ID", 0x1A0, 64, Show::Hex},
    {"COMMITTED_TCB", 0x1E0, 8, Show::Tcb},
    {"CURRENT firmware", 0x1E8, 4, Show::Firmware},
    {"COMMITTED firmware", 0x1EC, 4, Show::Firmware},
    {"LAUNCH_TCB", 0x1F0, 8, Show::Tcb},
    {"LAUNCH_MIT_VECTOR", 0x1F8, 8, Show::Hex, 5},
    {"CURRENT_MIT_VECTOR", 0x200, 8, Show::Hex, 5},
    {"reserved", 0x208, kSnpSignedBytes - 0x208, Show::Reserved},
    {"SIGNATURE r (LE)", kSnpSignedBytes, kScalarField, Show::Hex},
    {"SIGNATURE s (LE)", kSnpSignedBytes + kScalarField, kScalarField, Show::Hex},
    {"signature padding", kSnpSignedBytes + 2 * kScalarField,
     kSnpReportBytes - kSnpSignedBytes - 2 * kScalarField, Show::Reserved},
}};

constexpr bool fields_cover_the_report() {
  std::size_t at = 0;
  for (const Field& f : kFields) {
    if (f.offset != at) return false;
    at += f.size;
  }
  return at == kSnpReportBytes;
}
static_assert(fields_cover_the_report(), "kFields must tile the 1184-byte report");

struct Bit {
  int bit;
  const char* name;
};

// Guest policy bits (bits 7:0 and 15:8 are the minimum ABI minor and major; bit 17 is reserved, 1).
constexpr std::array<Bit, 9> kPolicyBits = {{
    {16, "SMT allowed"},
    {18, "migration agent allowed"},
    {19, "DEBUG ALLOWED (the hypervisor may read and change the guest's memory)"},
    {20, "single socket required"},
    {21, "CXL allowed"},
    {22, "AES-256-XTS required"},
    {23, "RAPL disabled required"},
    {24, "ciphertext hiding required"},
    {25, "page swap disabled"},
}};

constexpr std::array<Bit, 7> kPlatformBits = {{
    {0, "SMT enabled"},
    {1, "TSME enabled"},
    {2, "ECC enabled"},
    {3, "RAPL disabled"},
    {4, "ciphertext hiding enabled"},
    {5, "alias check complete"},
    {7, "TIO enabled"},
}};

template <std::size_t N>
std::string bits_text(std::uint64_t value, const std::array<Bit, N>& bits) {
  std::string out;
  for (const Bit& b : bits)
    if ((value >> b.bit) & 1U) out += (out.empty() ? "" : ", ") + std::string(b.name);
  return out.empty() ? "none" : out;
}

std::string hex64(std::uint64_t v) {
  std::array<char, 24> s{};
  std::snprintf(s.data(), s.size(), "0x%016llx", static_cast<unsigned long long>(v));
  return s.data();
}

std::string policy_text(std::uint64_t p) {
  std::string out = hex64(p) + ": ABI " + std::to_string((p >> 8) & 0xff) + "." + std::to_string(p & 0xff) +
                    " or later; " + bits_text(p, kPolicyBits);
  return ((p >> 19) & 1U) ? out : out + "; debug not allowed";
}

std::string signer_text(std::uint64_t s) {
  static constexpr std::array<const char*, 8> kKeys = {"VCEK",       "VLEK",       "reserved 2", "reserved 3",
                                                       "reserved 4", "reserved 5", "reserved 6", "none"};
  return std::string("signing key ") + kKeys[(s >> 2) & 7] + ", author key " +
         ((s & 1U) ? "enabled" : "not enabled") + ((s & 2U) ? ", chip key MASKED (no signature)" : "");
}

}  // namespace

// Milan's and Genoa's TCB_VERSION: byte 0 boot loader, 1 TEE, 2-5 reserved, 6 SNP, 7 microcode.
std::string snp_tcb_text(ByteView tcb) {
  return "boot loader " + std::to_string(tcb[0]) + ", TEE " + std::to_string(tcb[1]) + ", SNP " +
         std::to_string(tcb[6]) + ", microcode " + std::to_string(tcb[7]) + " (bytes " + to_hex(tcb) + ")";
}

namespace {

std::string value_text(const SnpReport& r, const Field& f) {
  const ByteView v = r.field(f.offset, f.size);
  const std::uint64_t n = f.size <= 8 ? load_le(v) : 0;
  switch (f.show) {
    case Show::Number:
      return std::to_string(n);
    case Show::Policy:
      return policy_text(n);
    case Show::Tcb:
      return snp_tcb_text(v);
    case Show::PlatformInfo:
      return hex64(n) + ": " + bits_text(n, kPlatformBits);
    case Show::SignerInfo:
      return signer_text(n);
    case Show::Firmware:
      return std::to_string(v[2]) + "." + std::to_string(v[1]) + " build " + std::to_string(v[0]);
    case Show::Cpuid:
      return "family " + std::to_string(v[0]) + ", model " + std::to_string(v[1]) + ", stepping " +
             std::to_string(v[2]);
    case Show::Hex:
    case Show::Reserved:
      break;
  }
  return to_hex(v);
}

void expect(bool ok, const std::string& what) {
  if (!ok) throw InputError(what);
}

}  // namespace

std::uint64_t SnpReport::number(std::size_t offset, std::size_t size) const {
  return load_le(field(offset, size));
}

bool looks_like_snp_report(ByteView b) {
  if (b.size() != kSnpReportBytes) return false;
  const std::uint64_t version = load_le(b.subspan(0, 4));
  return version >= kFirstVersion && version <= kLastVersion &&
         load_le(b.subspan(0x34, 4)) == kEcdsaP384Sha384;
}

SnpReport parse_snp_report(ByteView bytes, const std::string& where) {
  ByteReader in(bytes, where + ": SEV-SNP report");
  for (const Field& f : kFields) (void)in.take(f.size, f.name);
  SnpReport r{where, {bytes.begin(), bytes.begin() + kSnpReportBytes}};
  expect(r.version() >= kFirstVersion && r.version() <= kLastVersion,
         in.what() + ": VERSION " + std::to_string(r.version()) +
             " is not an SEV-SNP report version 2 to 5 (not an "
             "ATTESTATION_REPORT?)");
  expect(r.number(0x34, 4) == kEcdsaP384Sha384, in.what() + ": SIGNATURE_ALGO " +
                                                    std::to_string(r.number(0x34, 4)) +
                                                    " is not ECDSA P-384 with SHA-384 (1)");
  expect(in.remaining() == 0, in.what() + ": " + std::to_string(in.remaining()) +
                                  " bytes after the 1184-byte ATTESTATION_REPORT (give the report alone, "
                                  "not the firmware's response around it)");
  const ByteView padding = ByteView(r.bytes).subspan(kSnpSignedBytes + 2 * kScalarField);
  expect(
      std::all_of(padding.begin(), padding.end(), [](std::uint8_t b) { return b == 0; }),
      in.what() +
          ": SIGNATURE has bytes after r and s that are not zero (not a report as the firmware writes it)");
  return r;
}

std::string describe(const SnpReport& r) {
  std::string out = "AMD SEV-SNP attestation report: " + r.source + " (version " +
                    std::to_string(r.version()) + ", " + std::to_string(kSnpReportBytes) + " bytes, " +
                    std::to_string(kSnpSignedBytes) + " signed, ECDSA P-384 with SHA-384)\n";
  for (const Field& f : kFields)
    if (f.show != Show::Reserved && r.version() >= f.since_version)
      out += field_line(f.name, value_text(r, f));
  return out;
}

}  // namespace tt::tee::evidence
