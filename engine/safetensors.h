// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
// u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
// raw little-endian tensor bytes. Other frameworks (PyTorch, JAX, numpy) load these files directly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tt {

struct SafeTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> data;  // float32 only: all our state is float32
};

// Serialises tensors (in the given order) plus string metadata into one byte buffer.
std::vector<std::byte> safetensors_encode(const std::vector<SafeTensor>& tensors,
                                          const std::map<std::string, std::string>& metadata);

struct DecodedTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
struct DecodedSafetensors {
  std::map<std::string, DecodedTensor> tensors;
  std::map<std::string, std::string> metadata;
};
// Parses a safetensors buffer; throws tt::InputError (naming `what`) on a malformed file, whatever
// the bytes (shape arithmetic is checked and unsigned; no JSON library exception escapes).
DecodedSafetensors safetensors_decode(std::span<const std::byte> bytes, const std::string& what);

}  // namespace tt
