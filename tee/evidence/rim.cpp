#include "tee/evidence/rim.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/error.h"
#include "tee/evidence/nvidia_evidence.h"
#include "tee/evidence/xml.h"
#include "tee/regular_file.h"

namespace tt::tee::evidence {
namespace {

constexpr int kMaxIndex = 255;
constexpr int kMaxAlternatives = 64;
constexpr std::size_t kMaxMeasurementBytes = 64;

int number_attribute(const xmlNode* node, const char* name, int lo, int hi, const std::string& what) {
  const std::optional<std::string> text = attribute(node, name);
  int v = 0;
  const auto [end, ec] = text ? std::from_chars(text->data(), text->data() + text->size(), v)
                              : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (!text || ec != std::errc() || end != text->data() + text->size() || v < lo || v > hi)
    throw InputError(what + ": attribute " + name + " is not a number in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  return v;
}

GoldenMeasurement parse_resource(const xmlNode* node, const std::string& where) {
  GoldenMeasurement g;
  g.index = number_attribute(node, "index", 0, kMaxIndex, where + ": Resource");
  const std::string what = where + ": Resource index " + std::to_string(g.index);
  const std::optional<std::string> active = attribute(node, "active");
  if (!active || (*active != "True" && *active != "False"))
    throw InputError(what + ": attribute active is not True or False");
  g.active = *active == "True";
  g.size = static_cast<std::size_t>(number_attribute(node, "size", 1, kMaxMeasurementBytes, what));
  g.name = attribute(node, "name").value_or("");
  const int n = number_attribute(node, "alternatives", 1, kMaxAlternatives, what);
  for (int i = 0; i < n; ++i) {
    const std::string attr = "Hash" + std::to_string(i);
    const std::optional<std::string> hex = attribute(node, attr.c_str(), kSha384Ns);
    std::vector<std::uint8_t> value;
    try {
      value = hex ? from_hex(*hex) : std::vector<std::uint8_t>{};
    } catch (const std::invalid_argument&) {
    }
    if (value.size() != g.size)
      throw InputError(what + ": " + attr + " is not " + std::to_string(g.size) + " bytes of hex");
    g.alternatives.push_back(std::move(value));
  }
  return g;
}

std::vector<Certificate> signer_chain(xmlNode* root, const std::string& where) {
  std::vector<Certificate> chain;
  for (xmlNode* sig : child_elements(root, "Signature", kDsigNs)) {
    for (xmlNode* c : descendant_elements(sig, "X509Certificate", kDsigNs)) {
      const std::vector<std::uint8_t> der = decode_base64(text_content(c), where + ": X509Certificate");
      try {
        chain.push_back(Certificate::from_der(der));
      } catch (const IntegrityError&) {
        throw InputError(where + ": an X509Certificate of the signature is not a DER certificate");
      }
    }
  }
  if (chain.empty())
    throw InputError(where + ": no signature with certificates (an unsigned RIM proves nothing)");
  return chain;
}

const xmlNode* only_child(const xmlNode* parent, const char* local, const std::string& where) {
  const std::vector<xmlNode*> found = child_elements(parent, local, kSwidNs);
  if (found.size() != 1)
    throw InputError(where + ": expected one " + local + " element, found " + std::to_string(found.size()));
  return found.front();
}

}  // namespace

bool Rim::is_vbios() const {
  // xx.xx.xx.xx.xx in hex, as NVIDIA's VBIOS versions are written.
  if (version.size() != 14) return false;
  for (std::size_t i = 0; i < version.size(); ++i) {
    const bool dot = i % 3 == 2;
    if (dot ? version[i] != '.' : std::isxdigit(static_cast<unsigned char>(version[i])) == 0) return false;
  }
  return true;
}

Rim parse_rim(std::string_view xml, const std::string& where) {
  const XmlDocPtr doc = read_xml(xml, where);
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!is_element(root, "SoftwareIdentity", kSwidNs))
    throw InputError(where +
                     ": not a SWID tag (root element is not SoftwareIdentity); give NVIDIA's RIM file");
  Rim rim;
  rim.source = where;
  rim.tag_id = attribute(root, "tagId").value_or("");
  const xmlNode* meta = only_child(root, "Meta", where);
  rim.version = attribute(meta, "colloquialVersion").value_or("");
  rim.product = attribute(meta, "product").value_or("");
  if (rim.version.empty()) throw InputError(where + ": Meta has no colloquialVersion");
  for (const xmlNode* r : child_elements(only_child(root, "Payload", where), "Resource", kSwidNs)) {
    if (attribute(r, "type") != "Measurement") continue;
    GoldenMeasurement g = parse_resource(r, where);
    const bool twice = std::any_of(rim.measurements.begin(), rim.measurements.end(),
                                   [&](const GoldenMeasurement& o) { return o.index == g.index; });
    if (twice) throw InputError(where + ": measurement index " + std::to_string(g.index) + " twice");
    rim.measurements.push_back(std::move(g));
  }
  rim.signer_chain = signer_chain(root, where);
  rim.xml.assign(xml);
  return rim;
}

Rim load_rim(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, "--rim", kMaxRimFileBytes);
  return parse_rim(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                   "--rim '" + printable_path(path) + "'");
}

GoldenComparison compare_golden(const std::vector<Rim>& rims,
                                const std::map<int, std::vector<std::uint8_t>>& runtime,
                                const std::set<int>& skip) {
  GoldenComparison out;
  std::map<int, const Rim*> owner;
  for (const Rim& rim : rims) {
    for (const GoldenMeasurement& g : rim.measurements) {
      if (!g.active) continue;
      if (const auto [it, fresh] = owner.emplace(g.index, &rim); !fresh)
        throw InputError("RIMs " + it->second->source + " and " + rim.source +
                         " both give measurement index " + std::to_string(g.index) +
                         " (give one driver RIM and one VBIOS RIM)");
      if (skip.count(g.index) != 0) {
        out.skipped.push_back(g.index);
        continue;
      }
      ++out.compared;
      const auto found = runtime.find(g.index);
      const bool match = found != runtime.end() && std::find(g.alternatives.begin(), g.alternatives.end(),
                                                             found->second) != g.alternatives.end();
      if (!match)
        out.mismatches.push_back(
            {g.index, rim.source, found == runtime.end() ? std::vector<std::uint8_t>{} : found->second});
    }
  }
  std::sort(out.mismatches.begin(), out.mismatches.end(),
            [](const MeasurementMismatch& a, const MeasurementMismatch& b) { return a.index < b.index; });
  return out;
}

}  // namespace tt::tee::evidence
