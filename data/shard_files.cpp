#include "data/shard_files.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>

namespace tt {
namespace fs = std::filesystem;

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::vector<fs::path> match_in_dir(const fs::path& dir, const std::string& pattern) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path d = dir.empty() ? fs::path(".") : dir;
  if (!fs::is_directory(d, ec)) return out;
  for (const auto& e : fs::directory_iterator(d, ec)) {
    if (!e.is_regular_file()) continue;
    const auto name = e.path().filename().string();
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) out.push_back(dir.empty() ? e.path().filename() : e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string human_count(uint64_t n) {
  char buf[32];
  if (n >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  } else if (n >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  }
  return buf;
}

}  // namespace tt
