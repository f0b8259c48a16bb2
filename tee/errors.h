// OpenSSL error reporting for tee/. The error types themselves (IntegrityError, CryptoError) are
// base/error.h's, with their exit-code categories.
#pragma once
#include <string>

#include "base/error.h"

namespace tt::tee {

// Throws CryptoError("<what>: <OpenSSL error queue>") and clears the OpenSSL error queue, so a
// stale error never leaks into the next report on this thread.
[[noreturn]] void throw_openssl_error(const std::string& what);

// Empties this thread's OpenSSL error queue (after an expected failure such as a tag mismatch).
void clear_openssl_errors() noexcept;

}  // namespace tt::tee
