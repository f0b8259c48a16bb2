// Resolving --data specs to files, shared by the plain and sealed token loaders.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tt {

bool has_glob_chars(const std::string& s);
// True when `p` names a regular file, false when it names nothing or a directory; anything else (a
// FIFO, device or socket) is refused here with an InputError naming it, so no reader ever opens it
// (Note [Opening a user's file], tee/regular_file.h).
bool is_data_file(const std::filesystem::path& p);
// Sorted files in `dir` whose name matches the fnmatch pattern (is_data_file: a matching FIFO or
// device is refused, not skipped).
std::vector<std::filesystem::path> match_in_dir(const std::filesystem::path& dir, const std::string& pattern);
// 2444768 -> "2.4M", for descriptions.
std::string human_count(uint64_t n);

}  // namespace tt
