// libxml2 for the RIM reader (tee/evidence/rim.h): one way to parse untrusted XML, and small helpers
// over its tree. Parsing never touches the network, never loads or expands a DTD (a document with one
// is refused: RIMs have none, and entity expansion is how XML parsers are attacked), and prints
// nothing: errors come back as one InputError.
#pragma once
#include <libxml/tree.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt::tee::evidence {

inline constexpr const char* kSwidNs = "http://standards.iso.org/iso/19770/-2/2015/schema.xsd";
inline constexpr const char* kDsigNs = "http://www.w3.org/2000/09/xmldsig#";
inline constexpr const char* kSha384Ns = "http://www.w3.org/2001/04/xmlenc#sha384";

struct XmlDocFree {
  void operator()(xmlDoc* d) const noexcept;
};
using XmlDocPtr = std::unique_ptr<xmlDoc, XmlDocFree>;

// Throws InputError("<where>: not well-formed XML" / "has a DTD").
XmlDocPtr read_xml(std::string_view xml, const std::string& where);

// Whether `node` is the element {ns}local.
bool is_element(const xmlNode* node, const char* local, const char* ns);
// The element children of `parent` named {ns}local, in document order.
std::vector<xmlNode*> child_elements(const xmlNode* parent, const char* local, const char* ns);
// Every element named {ns}local anywhere below `root` (root included).
std::vector<xmlNode*> descendant_elements(xmlNode* root, const char* local, const char* ns);
// An attribute's value; `ns` null for an attribute without namespace.
std::optional<std::string> attribute(const xmlNode* node, const char* name, const char* ns = nullptr);
// The text content of an element.
std::string text_content(const xmlNode* node);

}  // namespace tt::tee::evidence
