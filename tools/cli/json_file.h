// Writing a command's JSON output file (--json, --summary, --out): one place that opens it and says,
// naming the flag, when it cannot.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "tee/regular_file.h"

namespace tt::cli {

// Writes `j` (indented by 2) to `path`; InputError "FLAG PATH: cannot open for writing: WHY" (exit 2)
// when the file cannot be created or is not a regular file (tee/regular_file.h: open_output_file).
inline void write_json_file(const std::string& flag, const std::string& path, const nlohmann::json& j) {
  const tee::UniqueFd fd = tee::open_output_file(path, flag, tee::OutputMode::Truncate);
  tee::write_output(fd.get(), j.dump(2) + "\n", path, flag);
}

}  // namespace tt::cli
