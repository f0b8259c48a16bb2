#include "engine/checkpoint/safetensors.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>

#include "base/error.h"
#include "base/untrusted_json.h"
#include "tee/bytes.h"
#include "tee/regular_file.h"

namespace tt {

std::vector<std::byte> safetensors_encode(const std::vector<SafeTensor>& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  // The header text is put together entry by entry: an ordered_json object looks every key up
  // linearly, which made encoding n tensors quadratic. Same text as its dump() (names are unique).
  std::string h = "{";
  if (!metadata.empty()) h.append("\"__metadata__\":").append(nlohmann::json(metadata).dump());
  std::size_t offset = 0;
  for (const SafeTensor& t : tensors) {
    const std::size_t bytes = t.data.size() * sizeof(float);
    const nlohmann::ordered_json entry = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    if (h.size() > 1) h.push_back(',');
    h.append(nlohmann::json(t.name).dump()).append(":").append(entry.dump());
    offset += bytes;
  }
  h.push_back('}');
  // Pad the header with spaces so the tensor data starts 8-byte aligned (as the reference writer does).
  while ((h.size() % 8) != 0) h.push_back(' ');
  std::vector<std::byte> out(8 + h.size() + offset);
  const uint64_t hlen = h.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::byte>((hlen >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, h.data(), h.size());
  std::byte* p = out.data() + 8 + h.size();
  for (const SafeTensor& t : tensors) {
    if (t.data.empty()) continue;  // an empty span's data() may be null, which memcpy must not get
    std::memcpy(p, t.data.data(), t.data.size() * sizeof(float));
    p += t.data.size() * sizeof(float);
  }
  return out;
}

namespace {

// Every problem with the bytes is an InputError naming the file (exit 2), never a JSON library
// exception, an overflow or an out-of-bounds read: a checkpoint file is input like any other.
InputError malformed(const std::string& what, const std::string& why) {
  return InputError(what + ": not a valid safetensors file (" + why + ")");
}

// Bytes per element of the dtypes the format defines; 0 for anything else.
std::uint64_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::uint64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

class HeaderReader {
 public:
  explicit HeaderReader(const std::string& what) : what_(what) {}
  InputError bad(const std::string& why) const { return malformed(what_, why); }

  // Product of the dimensions in unsigned 64-bit, checked: a huge or negative dimension is refused
  // here instead of wrapping into a size that passes the byte-count check.
  std::uint64_t shape(const nlohmann::json& j, const std::string& name, std::vector<int64_t>& out) const {
    if (!j.is_array()) throw bad("tensor '" + name + "' has no shape array");
    std::uint64_t numel = 1;
    for (const auto& d : j) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        throw bad("tensor '" + name + "' has a dimension that is not an integer in [0, 2^63)");
      const std::uint64_t v = d.get<std::uint64_t>();
      if (v != 0 && numel > UINT64_MAX / v) throw bad("tensor '" + name + "' has more elements than 2^64");
      numel *= v;
      out.push_back(static_cast<int64_t>(v));
    }
    return numel;
  }

  SafetensorsEntry tensor(const nlohmann::json& e, const std::string& name, std::uint64_t data_size) const {
    if (!e.is_object()) throw bad("tensor '" + name + "' is not an object");
    const auto field = [&](const char* key) {
      const auto it = e.find(key);
      return it == e.end() ? nlohmann::json() : *it;
    };
    const nlohmann::json dtype = field("dtype");
    if (!dtype.is_string() || dtype_size(dtype.get<std::string>()) == 0)
      throw bad("tensor '" + name + "' has no known dtype");
    SafetensorsEntry t;
    t.name = name;
    t.dtype = dtype.get<std::string>();
    t.numel = shape(field("shape"), name, t.shape);
    const nlohmann::json offs = field("data_offsets");
    if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() ||
        !offs[1].is_number_unsigned())
      throw bad("tensor '" + name + "' has bad offsets");
    t.begin = offs[0].get<std::uint64_t>();
    t.end = offs[1].get<std::uint64_t>();
    if (t.begin > t.end || t.end > data_size) throw bad("tensor '" + name + "' has bad offsets");
    const std::uint64_t esize = dtype_size(t.dtype);
    if (t.numel > (t.end - t.begin) / esize || t.numel * esize != t.end - t.begin)
      throw bad("tensor '" + name + "' size mismatch");
    return t;
  }

 private:
  const std::string& what_;
};

// The top-level keys of a JSON object in file order, as a SAX pass meets them (nothing is built).
// Note: nlohmann's parser callback (parse(..., cb)) would give the same order while building the
// DOM, but after every nested object it scans its parent's members for a discarded value, so a
// header of n tensors took O(n^2) time (60k tensors: minutes). Two linear passes instead: this one
// for the order, a plain parse for the values.
class TopLevelKeys final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<std::string> keys;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) keys.push_back(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  int depth_ = 0;
};

// The one header parser: `text` is the JSON after the 8-byte length, `data_size` the bytes after it.
SafetensorsHeader parse_header_text(std::string_view text, std::uint64_t data_size, const std::string& what) {
  const HeaderReader r(what);
  SafetensorsHeader out;
  out.data_offset = 8 + text.size();
  out.data_size = data_size;
  try {
    // A std::map-backed json (ordered_json's lookups are linear: a header of many keys would take
    // quadratic time), with the top-level keys' file order from a SAX pass (TopLevelKeys).
    TopLevelKeys order_pass;
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &order_pass)) throw r.bad("header is not JSON");
    const std::vector<std::string>& order = order_pass.keys;
    const nlohmann::json header = parse_untrusted_json(text);
    if (header.is_discarded()) throw r.bad("header is not JSON (or nests deeper than 64 levels)");
    if (!header.is_object()) throw r.bad("header is not a JSON object");
    std::set<std::string> seen;  // a repeated key holds its last value, listed once
    for (const std::string& key : order) {
      if (!seen.insert(key).second) continue;
      const auto it = header.find(key);
      if (it == header.end()) throw r.bad("header keys do not match its object");  // not expected
      if (key == "__metadata__") {
        if (!it->is_object()) throw r.bad("__metadata__ is not an object");
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string()) throw r.bad("__metadata__ value '" + m.key() + "' is not a string");
          out.metadata[m.key()] = m->get<std::string>();
        }
        continue;
      }
      out.tensors.push_back(r.tensor(*it, key, data_size));
    }
    if (seen.size() != header.size()) throw r.bad("header keys do not match its object");  // not expected
  } catch (const nlohmann::json::exception& e) {  // not expected after the checks above; still input
    throw r.bad(e.what());
  }
  // No two tensors share bytes: then the byte counts (and element counts) sum to at most data_size.
  std::vector<const SafetensorsEntry*> by_begin;
  for (const SafetensorsEntry& t : out.tensors)
    if (t.end > t.begin) by_begin.push_back(&t);
  std::sort(by_begin.begin(), by_begin.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_begin.size(); ++i) {
    if (by_begin[i]->begin < by_begin[i - 1]->end)
      throw r.bad("tensors '" + by_begin[i - 1]->name + "' and '" + by_begin[i]->name + "' overlap");
  }
  return out;
}

// The little-endian u64 that starts the file.
std::uint64_t header_length(const std::byte* p) {
  return tee::load_le(tee::ByteView(reinterpret_cast<const std::uint8_t*>(p), 8));
}

std::string too_long() {
  return "header length exceeds " + std::to_string(kSafetensorsMaxHeaderBytes >> 30) + " GiB";
}

}  // namespace

SafetensorsHeader safetensors_parse_header(std::span<const std::byte> bytes, const std::string& what) {
  if (bytes.size() < 8) throw malformed(what, "shorter than its 8-byte header length");
  const std::uint64_t hlen = header_length(bytes.data());
  if (hlen > kSafetensorsMaxHeaderBytes) throw malformed(what, too_long());
  if (hlen > bytes.size() - 8) throw malformed(what, "header length exceeds the file size");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8),
                              static_cast<std::size_t>(hlen));
  return parse_header_text(text, bytes.size() - 8 - hlen, what);
}

SafetensorsHeader safetensors_read_header(const std::filesystem::path& path) {
  const std::string what = tee::printable_path(path);
  const tee::RegularFile f = tee::open_regular_file(path, "safetensors file");
  const std::uint64_t size = f.size;
  std::array<std::uint8_t, 8> len{};
  if (size < 8 || tee::pread_full(f.fd.get(), len, 0) != 8)
    throw malformed(what, "shorter than its 8-byte header length");
  const std::uint64_t hlen = header_length(reinterpret_cast<const std::byte*>(len.data()));
  if (hlen > kSafetensorsMaxHeaderBytes) throw malformed(what, too_long());
  if (hlen > size - 8) throw malformed(what, "header length exceeds the file size");
  std::string text(static_cast<std::size_t>(hlen), '\0');
  if (tee::pread_full(f.fd.get(),
                      tee::MutableByteView(reinterpret_cast<std::uint8_t*>(text.data()), text.size()),
                      8) != static_cast<long long>(hlen))
    throw malformed(what, "truncated header");
  return parse_header_text(text, size - 8 - hlen, what);
}

DecodedSafetensors safetensors_decode(std::span<const std::byte> bytes, const std::string& what) {
  SafetensorsHeader h = safetensors_parse_header(bytes, what);
  const std::span<const std::byte> body = bytes.subspan(static_cast<std::size_t>(h.data_offset));
  DecodedSafetensors out;
  for (SafetensorsEntry& t : h.tensors) {
    if (t.dtype != "F32") throw malformed(what, "tensor '" + t.name + "' is not F32");
    DecodedTensor d;
    d.shape = std::move(t.shape);
    d.data.resize(static_cast<std::size_t>(t.numel));
    if (t.end > t.begin)  // no null pointers to memcpy
      std::memcpy(d.data.data(), body.data() + t.begin, static_cast<std::size_t>(t.end - t.begin));
    if (!out.tensors.emplace(t.name, std::move(d)).second)
      throw malformed(what, "tensor '" + t.name + "' appears twice");
  }
  out.metadata = std::move(h.metadata);
  return out;
}

}  // namespace tt
