#include "engine/safetensors.h"

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
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((hlen >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, h.data(), h.size());
  std::byte* p = out.data() + 8 + h.size();
  for (const SafeTensor& t : tensors) {
    std::memcpy(p, t.data.data(), t.data.size() * sizeof(float));
    p += t.data.size() * sizeof(float);
  }
  return out;
}

DecodedSafetensors safetensors_decode(std::span<const std::byte> bytes, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return InputError(what + ": not a valid safetensors file (" + why + ")");
  };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  if (hlen > bytes.size() - 8) throw bad("header length exceeds the file size");
  const std::string htext(reinterpret_cast<const char*>(bytes.data() + 8), hlen);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(htext);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header is not JSON: ") + e.what());
  }
  const std::span<const std::byte> body = bytes.subspan(8 + hlen);
  DecodedSafetensors out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m) out.metadata[m.key()] = m->get<std::string>();
      continue;
    }
    const auto& e = *it;
    if (!e.contains("dtype") || e["dtype"] != "F32") throw bad("tensor '" + it.key() + "' is not F32");
    DecodedTensor t;
    t.shape = e.at("shape").get<std::vector<int64_t>>();
    const auto offs = e.at("data_offsets").get<std::vector<uint64_t>>();
    if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > body.size()) throw bad("tensor '" + it.key() + "' has bad offsets");
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    if (static_cast<uint64_t>(numel) * sizeof(float) != offs[1] - offs[0]) throw bad("tensor '" + it.key() + "' size mismatch");
    t.data.resize(static_cast<std::size_t>(numel));
    std::memcpy(t.data.data(), body.data() + offs[0], offs[1] - offs[0]);
    out.tensors.emplace(it.key(), std::move(t));
  }
  return out;
}

}  // namespace tt
