// Number validators with messages a user can act on (CLI11's own range checks print DBL_MAX).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace tt::cli {

inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          std::size_t pos = 0;
          const double v = std::stod(s, &pos);
          if (pos != s.size()) return "'" + s + "' is not a number";
          if (!(v > 0)) return "must be greater than 0 (got " + s + ")";
        } catch (const std::exception&) {
          return "'" + s + "' is not a number";
        }
        return {};
      },
      "POSITIVE");
}

inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          std::size_t pos = 0;
          const double v = std::stod(s, &pos);
          if (pos != s.size()) return "'" + s + "' is not a number";
          if (v < 0) return "must be 0 or more (got " + s + ")";
        } catch (const std::exception&) {
          return "'" + s + "' is not a number";
        }
        return {};
      },
      "NON-NEGATIVE");
}

}  // namespace tt::cli
