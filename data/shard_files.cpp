#include "data/shard_files.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <cstdio>

#include "base/error.h"
#include "tee/regular_file.h"

namespace tt {
namespace fs = std::filesystem;

bool has_glob_chars(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

bool is_data_file(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return false;  // stat never opens: no blocking
  if (S_ISREG(st.st_mode)) return true;
  throw InputError("--data '" + tee::printable_path(p) + "': is " + tee::file_type_text(st.st_mode) +
                   ", not a regular file");
}

std::vector<fs::path> match_in_dir(const fs::path& dir, const std::string& pattern) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path d = dir.empty() ? fs::path(".") : dir;
  if (!fs::is_directory(d, ec)) return out;
  for (const auto& e : fs::directory_iterator(d, ec)) {
    const auto name = e.path().filename().string();
    if (fnmatch(pattern.c_str(), name.c_str(), 0) != 0 || !is_data_file(e.path())) continue;
    out.push_back(dir.empty() ? e.path().filename() : e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<fs::path>> files_named_directly(const fs::path& p) {
  if (is_data_file(p)) return std::vector<fs::path>{p};
  if (has_glob_chars(p.filename().string())) return match_in_dir(p.parent_path(), p.filename().string());
  return std::nullopt;
}

std::vector<fs::path> find_split_files(const std::string& spec, const std::string& split,
                                       const std::string& suffix,
                                       const std::function<bool(const fs::path&)>& named) {
  const fs::path p(spec);
  std::error_code ec;
  std::vector<fs::path> files;
  if (auto direct = files_named_directly(p)) {
    files = std::move(*direct);
  } else if (fs::is_directory(p, ec)) {
    files = match_in_dir(p, "*_" + split + suffix);
    auto numbered = match_in_dir(p, "*_" + split + "_*" + suffix);
    files.insert(files.end(), numbered.begin(), numbered.end());
    std::sort(files.begin(), files.end());
    return files;
  } else {
    const fs::path exact = spec + "_" + split + suffix;
    if (is_data_file(exact)) return {exact};
    return match_in_dir(p.parent_path(), p.filename().string() + "_" + split + "_*" + suffix);
  }
  if (named) std::erase_if(files, [&](const fs::path& f) { return !named(f); });
  return files;
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
