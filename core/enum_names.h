// Spellings of enum choices: one table per enum (EnumNames<E>::all, in the order help texts list
// them), read both ways. The command line parses with parse_enum; summaries, banners and descriptions
// print with enum_name, so a run's JSON reads as its command line.
#pragma once
#include <optional>
#include <string_view>
#include <utility>

namespace tt {

template <typename E>
struct EnumNames;

template <typename E>
const char* enum_name(E v) {
  for (const auto& [n, e] : EnumNames<E>::all) {
    if (e == v) return n;
  }
  return "?";
}
template <typename E>
std::optional<E> parse_enum(std::string_view text) {
  for (const auto& [n, e] : EnumNames<E>::all) {
    if (text == n) return e;
  }
  return std::nullopt;
}

}  // namespace tt
