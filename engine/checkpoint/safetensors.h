// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
// u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
// raw little-endian tensor bytes. Other frameworks (PyTorch, JAX, numpy) load these files directly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
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

// One tensor as the header describes it (nothing of its data is read).
struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // as stored: "F32", "BF16", "I64", ... (a dtype the format defines)
  std::vector<int64_t> shape;  // every dimension in [0, 2^63)
  std::uint64_t numel = 0;     // product of the dimensions (checked: numel * element size fits)
  std::uint64_t begin = 0;     // byte range [begin, end) within the data section
  std::uint64_t end = 0;
};
// A safetensors header, validated: tensors in file order, each with a byte range inside the data
// section that matches its dtype and shape and overlaps no other tensor's.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
  std::uint64_t data_offset = 0;                // 8 + header length: where the data section starts
  std::uint64_t data_size = 0;                  // bytes after the header
};
// Longest header accepted (the JSON text after the 8-byte length).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = std::uint64_t{1} << 30;

// Parses and validates the header of a whole safetensors file held in memory; throws tt::InputError
// (naming `what`) on a malformed file, whatever the bytes. safetensors_decode builds on this.
SafetensorsHeader safetensors_parse_header(std::span<const std::byte> bytes, const std::string& what);
// The same for a file on disk, reading only its header (a model file may be hundreds of MB); the
// data section's size comes from the file size. InputError names the file.
SafetensorsHeader safetensors_read_header(const std::filesystem::path& path);

struct DecodedTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
struct DecodedSafetensors {
  std::map<std::string, DecodedTensor> tensors;
  std::map<std::string, std::string> metadata;
};
// Parses a safetensors buffer (safetensors_parse_header, then every tensor must be F32 and is copied
// out); throws tt::InputError (naming `what`) on a malformed file, whatever the bytes (shape
// arithmetic is checked and unsigned; no JSON library exception escapes).
DecodedSafetensors safetensors_decode(std::span<const std::byte> bytes, const std::string& what);

}  // namespace tt
