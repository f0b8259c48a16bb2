#include "tools/cli/error_report.h"

#include <cerrno>
#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>

#include "tee/regular_file.h"

namespace tt::cli {
namespace {

// Errors of a path the user gave (exit 2); any other errno is a failure of the run (exit 1: a full
// disk, an I/O error).
bool is_input_errno(int e) {
  switch (e) {
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case EACCES:
    case EPERM:
    case EROFS:
    case ENAMETOOLONG:
    case ELOOP:
    case EILSEQ:
    case EEXIST:
    case EINVAL:
    case EXDEV:
      return true;
    default:
      return false;
  }
}

ErrorReport filesystem(const std::filesystem::filesystem_error& e) {
  // Appends only: GCC 12's -Wrestrict misfires on "literal" + string here.
  std::string text(1, '\'');
  text.append(tee::printable_path(e.path1())).append("'");
  if (!e.path2().empty()) text.append(" -> '").append(tee::printable_path(e.path2())).append("'");
  text.append(": ").append(e.code().message());
  if (e.code().value() == ENAMETOOLONG) text += " (over the system's limit of a path or of one name)";
  const bool input =
      e.code().category() == std::generic_category() || e.code().category() == std::system_category();
  return {input && is_input_errno(e.code().value()) ? ExitCode::kBadInput : ExitCode::kRunFailure, text};
}

ErrorReport json(const nlohmann::json::exception& e) {
  // 316: a string that is not UTF-8 was to be written as JSON: in practice a path or name.
  if (e.id == 316)
    return {ExitCode::kBadInput,
            "a path or name given is not valid UTF-8, which the run's JSON records (configuration, "
            "summary, checkpoints) cannot hold; rename it"};
  if (dynamic_cast<const nlohmann::json::parse_error*>(&e) != nullptr)
    return {ExitCode::kBadInput, "malformed JSON input (error " + std::to_string(e.id) + ")"};
  return {ExitCode::kRunFailure, "internal error handling JSON (error " + std::to_string(e.id) + ")"};
}

}  // namespace

ErrorReport report_error(const std::exception& e) {
  if (dynamic_cast<const Error*>(&e) != nullptr) return {exit_code_of(e), tee::printable_path(e.what())};
  if (const auto* fe = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) return filesystem(*fe);
  if (const auto* je = dynamic_cast<const nlohmann::json::exception*>(&e)) return json(*je);
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return {ExitCode::kRunFailure, "out of memory"};
  return {ExitCode::kRunFailure, "internal error: " + tee::printable_path(e.what())};
}

}  // namespace tt::cli
