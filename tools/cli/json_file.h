// Writing a command's JSON output file (--json, --summary, --out): one place that opens it and says,
// naming the flag, when it cannot.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"

namespace tt::cli {

// Writes `j` (indented by 2) to `path`; InputError "FLAG PATH: cannot open for writing" (exit 2) when the
// file cannot be created.
inline void write_json_file(const std::string& flag, const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (!f) throw InputError(flag + " " + path + ": cannot open for writing");
  f << j.dump(2) << '\n';
}

}  // namespace tt::cli
