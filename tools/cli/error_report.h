// The one line and exit code main() prints for an exception. Our own errors (base/error.h) carry
// both; anything else that still escapes (a std::filesystem error on a path no check caught, a JSON
// library exception, an allocation failure) is put into words here, so no raw library text such as
// "filesystem error: ..." or "[json.exception...]" reaches the user.
#pragma once
#include <exception>
#include <string>

#include "base/error.h"

namespace tt::cli {

struct ErrorReport {
  ExitCode code = ExitCode::kRunFailure;
  std::string text;  // one line, without the "teetrain: error: " prefix
};

ErrorReport report_error(const std::exception& e);

}  // namespace tt::cli
