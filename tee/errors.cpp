#include "tee/errors.h"

#include <openssl/err.h>

#include <array>

namespace tt::tee {

[[noreturn]] void throw_openssl_error(const std::string& what) {
  std::string msg = what;
  bool first = true;
  // Report every queued error: the first is usually the generic one, the last the root cause.
  while (unsigned long code = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(code, buf.data(), buf.size());
    msg += first ? ": " : "; ";
    msg += buf.data();
    first = false;
  }
  if (first) msg += ": OpenSSL reported no detail";
  throw CryptoError(msg);
}

void clear_openssl_errors() noexcept {
  ERR_clear_error();
}

}  // namespace tt::tee
