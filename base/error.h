// The error types every layer throws, and the exit-code category each one stands for. Library code
// only throws; main() alone turns an error into its exit code (and, under mpirun, MPI_Abort).
#pragma once
#include <exception>
#include <stdexcept>
#include <string>

namespace tt {

// teetrain's exit codes: what a script checks after a run.
enum class ExitCode : int {
  kOk = 0,
  kRunFailure = 1,  // the run itself failed: I/O, a peer that died, replicas that diverged, OpenSSL
  kBadInput = 2,    // the user's input: a file, flag, name or number
  kIntegrity = 3,   // an attack was detected: a seal failed to open, attestation failed
};

// The common base: an error that knows its category.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// Bad user input: a missing or malformed file, an unknown name, a nonsense number. Exit code 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(ExitCode::kBadInput, what) {}
};

// A failure of the run itself that is not the user's input (I/O failure, a peer that died,
// replicas that diverged, a CUDA call that failed). Exit code 1.
class RunError : public Error {
 public:
  explicit RunError(const std::string& what) : Error(ExitCode::kRunFailure, what) {}
};

// A message whose framing is not what the receiver posted for (longer than its buffer, not whole
// floats): a transport failure (exit 1) where messages travel in clear, but on a sealed path a message
// out of its place — reordered, replayed or forged — so the all-reduce that receives it reports an
// integrity failure instead (comm/allreduce/hop_runner.cpp, HopRunner::wait).
class FramingError : public RunError {
 public:
  explicit FramingError(const std::string& what) : RunError(what) {}
};

// A seal failed to open or a sealed object is not what it claims to be: tampered, replayed,
// reordered, truncated, malformed, or opened with the wrong key; or a peer failed attestation.
// Exit code 3. The message names what failed (file, chunk, field) and never contains key material.
class IntegrityError : public Error {
 public:
  explicit IntegrityError(const std::string& what) : Error(ExitCode::kIntegrity, what) {}
};

// OpenSSL itself failed (allocation, unavailable algorithm, internal error), or a key's lifetime
// limit was reached (nonce counter exhausted). Not an attack signal: exit code 1.
class CryptoError : public Error {
 public:
  explicit CryptoError(const std::string& what) : Error(ExitCode::kRunFailure, what) {}
};

// The exit code for any exception: an Error's own category, 1 for everything else (std::bad_alloc,
// a library's exception).
inline ExitCode exit_code_of(const std::exception& e) noexcept {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error != nullptr ? error->code() : ExitCode::kRunFailure;
}

}  // namespace tt
