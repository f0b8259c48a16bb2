// Error types that library code throws; only main() turns them into exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace tt {

// Bad user input: a missing or malformed file, an unknown name, a nonsense number.
// The CLI reports the message on one line and exits with code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// A failure of the run itself that is not the user's input (I/O failure, a peer that died,
// replicas that diverged). Exit code 1.
class RunError : public std::runtime_error {
 public:
  explicit RunError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace tt
