// Resolving --data specs to files, shared by the plain and sealed token loaders.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
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
// The files a --data spec names directly: itself when it is a data file, its matches when its last
// component is a glob; nullopt for a directory or a prefix (each caller resolves those its own way).
std::optional<std::vector<std::filesystem::path>> files_named_directly(const std::filesystem::path& spec);
// The `split` shards a --data `spec` names, for plain (`suffix` ".bin") and sealed (".bin.sealed") token
// data alike: an existing file; a glob on the file name; a directory (its *_<split><suffix> and
// *_<split>_*<suffix>); or a prefix (<spec>_<split><suffix>, else <spec>_<split>_*<suffix>). A file or
// glob names files whatever their names, so those pass `named` too when it is given (sealed data: only
// sealed files). Sorted; empty when nothing matches.
std::vector<std::filesystem::path> find_split_files(
    const std::string& spec, const std::string& split, const std::string& suffix,
    const std::function<bool(const std::filesystem::path&)>& named = {});
// 2444768 -> "2.4M", for descriptions.
std::string human_count(uint64_t n);

}  // namespace tt
