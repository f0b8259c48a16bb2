// The two error types tee/ throws. Library code only throws; the CLI maps them to exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace tt::tee {

// A seal failed to open or a sealed object is not what it claims to be: tampered, replayed,
// reordered, truncated, malformed, or opened with the wrong key. The CLI maps it to exit code 3.
// The message names what failed (file, chunk, field) and never contains key material.
class IntegrityError : public std::runtime_error {
 public:
  explicit IntegrityError(const std::string& what) : std::runtime_error(what) {}
};

// OpenSSL itself failed (allocation, unavailable algorithm, internal error), or a key's lifetime
// limit was reached (nonce counter exhausted). Not an attack signal: the CLI maps it to exit code 1.
class CryptoError : public std::runtime_error {
 public:
  explicit CryptoError(const std::string& what) : std::runtime_error(what) {}
};

// Throws CryptoError("<what>: <OpenSSL error queue>") and clears the OpenSSL error queue, so a
// stale error never leaks into the next report on this thread.
[[noreturn]] void throw_openssl_error(const std::string& what);

// Empties this thread's OpenSSL error queue (after an expected failure such as a tag mismatch).
void clear_openssl_errors() noexcept;

}  // namespace tt::tee
