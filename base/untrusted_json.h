// JSON that comes from outside the process (evidence, a checkpoint's state and manifest, sealed
// metadata, calibration and platform-profile files, safetensors headers): parsed with a bound on how
// deep objects and arrays nest. nlohmann's parser itself is iterative, but copying or destroying a value
// nested 100,000 deep recurses once per level and overflows the stack (seen: verify-evidence and
// `ckpt verify` crashed with SIGSEGV on a 1.2 MB file). Nothing we read nests deeper than a few levels.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace tt {

inline constexpr std::size_t kMaxJsonDepth = 64;

// The deepest nesting of objects and arrays in `text`, strings skipped (escapes included); the count
// stops once it passes `limit`. Linear, no recursion.
inline std::size_t json_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The value, or a discarded one (is_discarded()) when `text` is not JSON or nests deeper than
// kMaxJsonDepth: callers refuse both as malformed input.
inline nlohmann::json parse_untrusted_json(std::string_view text) {
  if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace tt
