#include "tee/evidence/xml.h"

#include <libxml/parser.h>
#include <libxml/xmlstring.h>

#include <climits>

#include "base/error.h"

namespace tt::tee::evidence {
namespace {

const xmlChar* xc(const char* s) {
  return reinterpret_cast<const xmlChar*>(s);
}

struct XmlFree {
  void operator()(xmlChar* p) const noexcept { xmlFree(p); }
};

std::string owned_text(xmlChar* p) {
  std::unique_ptr<xmlChar, XmlFree> owned(p);
  return owned ? std::string(reinterpret_cast<const char*>(owned.get())) : std::string();
}

}  // namespace

void XmlDocFree::operator()(xmlDoc* d) const noexcept {
  xmlFreeDoc(d);
}

XmlDocPtr read_xml(std::string_view xml, const std::string& where) {
  if (xml.size() > INT_MAX) throw InputError(where + ": too large for an XML document");
  // No XML_PARSE_NOENT (entities stay unexpanded), no DTD loading, no network.
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
  XmlDocPtr doc(xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "rim.xml", nullptr, options));
  xmlResetLastError();
  if (!doc || xmlDocGetRootElement(doc.get()) == nullptr)
    throw InputError(where + ": not well-formed XML (expected an NVIDIA RIM, a SWID tag)");
  if (doc->intSubset != nullptr || doc->extSubset != nullptr)
    throw InputError(where +
                     ": has a DTD; a RIM has none (refused: entity expansion is an attack on XML readers)");
  return doc;
}

bool is_element(const xmlNode* node, const char* local, const char* ns) {
  if (node == nullptr || node->type != XML_ELEMENT_NODE || !xmlStrEqual(node->name, xc(local))) return false;
  const bool has_ns = node->ns != nullptr && node->ns->href != nullptr;
  return ns == nullptr ? !has_ns : has_ns && xmlStrEqual(node->ns->href, xc(ns));
}

std::vector<xmlNode*> child_elements(const xmlNode* parent, const char* local, const char* ns) {
  std::vector<xmlNode*> out;
  for (xmlNode* c = parent->children; c != nullptr; c = c->next)
    if (is_element(c, local, ns)) out.push_back(c);
  return out;
}

std::vector<xmlNode*> descendant_elements(xmlNode* root, const char* local, const char* ns) {
  std::vector<xmlNode*> out;
  std::vector<xmlNode*> todo{root};
  while (!todo.empty()) {  // an explicit stack: a deeply nested hostile document cannot overflow ours
    xmlNode* n = todo.back();
    todo.pop_back();
    if (is_element(n, local, ns)) out.push_back(n);
    for (xmlNode* c = n->last; c != nullptr; c = c->prev)
      if (c->type == XML_ELEMENT_NODE) todo.push_back(c);
  }
  return out;
}

std::optional<std::string> attribute(const xmlNode* node, const char* name, const char* ns) {
  xmlChar* v = ns == nullptr ? xmlGetNoNsProp(node, xc(name)) : xmlGetNsProp(node, xc(name), xc(ns));
  if (v == nullptr) return std::nullopt;
  return owned_text(v);
}

std::string text_content(const xmlNode* node) {
  return owned_text(xmlNodeGetContent(node));
}

}  // namespace tt::tee::evidence
