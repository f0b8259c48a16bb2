#include "engine/safetensors.h"

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace tt {

std::vector<std::byte> safetensors_encode(const std::vector<SafeTensor>& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const SafeTensor& t : tensors) {
    const std::size_t bytes = t.data.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
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
class HeaderReader {
 public:
  explicit HeaderReader(const std::string& what) : what_(what) {}
  InputError bad(const std::string& why) const {
    return InputError(what_ + ": not a valid safetensors file (" + why + ")");
  }

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

  DecodedTensor tensor(const nlohmann::json& e, const std::string& name,
                       std::span<const std::byte> body) const {
    if (!e.is_object() || !e.contains("dtype") || e["dtype"] != "F32")
      throw bad("tensor '" + name + "' is not F32");
    DecodedTensor t;
    const std::uint64_t numel = shape(e.contains("shape") ? e["shape"] : nlohmann::json(), name, t.shape);
    const nlohmann::json offs = e.contains("data_offsets") ? e["data_offsets"] : nlohmann::json();
    if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() ||
        !offs[1].is_number_unsigned())
      throw bad("tensor '" + name + "' has bad offsets");
    const auto begin = offs[0].get<std::uint64_t>(), end = offs[1].get<std::uint64_t>();
    if (begin > end || end > body.size()) throw bad("tensor '" + name + "' has bad offsets");
    if (numel > (end - begin) / sizeof(float) || numel * sizeof(float) != end - begin)
      throw bad("tensor '" + name + "' size mismatch");
    t.data.resize(static_cast<std::size_t>(numel));
    if (end > begin)
      std::memcpy(t.data.data(), body.data() + begin, end - begin);  // no null pointers to memcpy
    return t;
  }

 private:
  const std::string& what_;
};

}  // namespace

DecodedSafetensors safetensors_decode(std::span<const std::byte> bytes, const std::string& what) {
  const HeaderReader r(what);
  if (bytes.size() < 8) throw r.bad("shorter than its 8-byte header length");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  if (hlen > bytes.size() - 8) throw r.bad("header length exceeds the file size");
  const std::string htext(reinterpret_cast<const char*>(bytes.data() + 8), hlen);
  const nlohmann::json header = nlohmann::json::parse(htext, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) throw r.bad("header is not JSON");
  if (!header.is_object()) throw r.bad("header is not a JSON object");
  const std::span<const std::byte> body = bytes.subspan(8 + hlen);
  DecodedSafetensors out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw r.bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw r.bad("__metadata__ value '" + m.key() + "' is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    out.tensors.emplace(it.key(), r.tensor(*it, it.key(), body));
  }
  return out;
}

}  // namespace tt
