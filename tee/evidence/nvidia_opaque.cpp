#include "tee/evidence/nvidia_opaque.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "tee/byte_reader.h"

namespace tt::tee::evidence {
namespace {

enum class Render { Text, Vbios, Number, Counters, Nvdec, Hex };

struct FieldKind {
  std::uint16_t type;
  const char* name;
  Render render;
};

constexpr std::uint16_t kDriverVersion = 3;
constexpr std::uint16_t kVbiosVersion = 6;
constexpr std::uint16_t kNvdec0Status = 11;
constexpr std::uint8_t kNvdecDisabled = 0x55;
constexpr std::uint8_t kNvdecEnabled = 0xAA;

constexpr std::array<FieldKind, 30> kFields = {{
    {1, "CERT_ISSUER_NAME", Render::Text},
    {2, "CERT_AUTHORITY_KEY_IDENTIFIER", Render::Hex},
    {kDriverVersion, "DRIVER_VERSION", Render::Text},
    {4, "GPU_INFO", Render::Hex},
    {5, "SKU", Render::Text},
    {kVbiosVersion, "VBIOS_VERSION", Render::Vbios},
    {7, "MANUFACTURER_ID", Render::Hex},
    {8, "TAMPER_DETECTION", Render::Hex},
    {9, "SMC", Render::Hex},
    {10, "VPR", Render::Hex},
    {kNvdec0Status, "NVDEC0_STATUS", Render::Nvdec},
    {12, "MSRSCNT", Render::Counters},
    {13, "CPRINFO", Render::Hex},
    {14, "BOARD_ID", Render::Number},
    {15, "CHIP_SKU", Render::Text},
    {16, "CHIP_SKU_MOD", Render::Text},
    {17, "PROJECT", Render::Text},
    {18, "PROJECT_SKU", Render::Text},
    {19, "PROJECT_SKU_MOD", Render::Text},
    {20, "FWID", Render::Hex},
    {21, "PROTECTED_PCIE_STATUS", Render::Hex},
    {22, "SWITCH_PDI", Render::Hex},
    {23, "FLOORSWEPT_PORTS", Render::Hex},
    {24, "POSITION_ID", Render::Number},
    {25, "LOCK_SWITCH_STATUS", Render::Hex},
    {32, "GPU_LINK_CONN", Render::Hex},
    {33, "SYS_ENABLE_STATUS", Render::Hex},
    {34, "OPAQUE_DATA_VERSION", Render::Number},
    {35, "CHIP_INFO", Render::Hex},
    {36, "FEATURE_FLAG", Render::Number},
}};

const FieldKind* kind_of(std::uint16_t type) {
  const auto* it =
      std::find_if(kFields.begin(), kFields.end(), [&](const FieldKind& k) { return k.type == type; });
  return it == kFields.end() ? nullptr : it;
}

// A NUL-terminated string field, or hex when it holds anything but printable ASCII.
std::string text_of(ByteView v) {
  std::size_t n = 0;
  while (n < v.size() && v[n] != 0) ++n;
  const bool printable = std::all_of(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n),
                                     [](std::uint8_t c) { return c >= 0x20 && c < 0x7f; });
  const bool zero_tail =
      std::all_of(v.begin() + static_cast<std::ptrdiff_t>(n), v.end(), [](std::uint8_t c) { return c == 0; });
  if (!printable || !zero_tail) return "0x" + to_hex(v);
  std::string out(1, '"');
  out.append(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  out += '"';
  return out;
}

// NVIDIA's VBIOS version: the 8 bytes read as a little-endian number, printed as five two-digit hex
// groups: bytes 3, 2, 1, 0 then 4 (00 a5 00 96 01 00 00 00 -> 96.00.a5.00.01).
std::string vbios_of(ByteView v) {
  if (v.size() != 8) return "0x" + to_hex(v);
  const std::array<std::uint8_t, 5> order = {v[3], v[2], v[1], v[0], v[4]};
  std::string out;
  for (std::uint8_t b : order) {
    if (!out.empty()) out += '.';
    out += to_hex(ByteView(&b, 1));
  }
  return out;
}

std::string counters_of(ByteView v) {
  if (v.size() % 4 != 0) return "0x" + to_hex(v);
  std::string out = std::to_string(v.size() / 4);
  out += " counters:";
  for (std::size_t i = 0; i < v.size(); i += 4) {
    out += ' ';
    out += std::to_string(load_le(v.subspan(i, 4)));
  }
  return out;
}

}  // namespace

std::vector<OpaqueField> parse_opaque_data(ByteView opaque) {
  ByteReader in(opaque, "NVIDIA opaque data");
  std::vector<OpaqueField> fields;
  while (in.remaining() > 0) {
    OpaqueField f;
    f.type = in.u16("field type");
    const ByteView value = in.take(in.u16("field size"), "field value");
    f.value.assign(value.begin(), value.end());
    fields.push_back(std::move(f));
  }
  return fields;
}

std::string opaque_field_name(std::uint16_t type) {
  const FieldKind* k = kind_of(type);
  return k != nullptr ? k->name : "UNKNOWN_" + std::to_string(type);
}

std::string opaque_field_text(const OpaqueField& field) {
  const FieldKind* k = kind_of(field.type);
  const ByteView v = field.value;
  switch (k != nullptr ? k->render : Render::Hex) {
    case Render::Text:
      return text_of(v);
    case Render::Vbios:
      return vbios_of(v);
    case Render::Number:
      return v.size() <= 8 && !v.empty() ? std::to_string(load_le(v)) : "0x" + to_hex(v);
    case Render::Counters:
      return counters_of(v);
    case Render::Nvdec:
      if (v.size() == 1 && (v[0] == kNvdecDisabled || v[0] == kNvdecEnabled))
        return (v[0] == kNvdecDisabled ? "disabled (0x" : "enabled (0x") + to_hex(v) + ")";
      return "0x" + to_hex(v);
    case Render::Hex:
      break;
  }
  return v.empty() ? "(empty)" : "0x" + to_hex(v);
}

std::optional<std::string> driver_version(const std::vector<OpaqueField>& fields) {
  for (const OpaqueField& f : fields) {
    if (f.type != kDriverVersion) continue;
    const std::string t = text_of(f.value);
    return t.size() >= 2 && t.front() == '"' ? t.substr(1, t.size() - 2) : t;
  }
  return std::nullopt;
}

std::optional<std::string> vbios_version(const std::vector<OpaqueField>& fields) {
  for (const OpaqueField& f : fields)
    if (f.type == kVbiosVersion) return vbios_of(f.value);
  return std::nullopt;
}

bool nvdec0_disabled(const std::vector<OpaqueField>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const OpaqueField& f) {
    return f.type == kNvdec0Status && f.value.size() == 1 && f.value[0] == kNvdecDisabled;
  });
}

}  // namespace tt::tee::evidence
