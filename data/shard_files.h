// Resolving --data specs to files, shared by the plain and sealed token loaders.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tt {

bool has_glob_chars(const std::string& s);
// Sorted regular files in `dir` whose name matches the fnmatch pattern.
std::vector<std::filesystem::path> match_in_dir(const std::filesystem::path& dir, const std::string& pattern);
// 2444768 -> "2.4M", for descriptions.
std::string human_count(uint64_t n);

}  // namespace tt
