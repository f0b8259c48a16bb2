// Warnings: a library function with one to give takes a WarnFn and calls it with one line, so the
// caller decides where it goes (tests collect the lines). print_warning is where the CLI sends them:
// the one format scripts and tests look for on stderr.
#pragma once
#include <cstdio>
#include <functional>
#include <string>

namespace tt {

using WarnFn = std::function<void(const std::string&)>;

inline void print_warning(const std::string& line) {
  std::fprintf(stderr, "teetrain: warning: %s\n", line.c_str());
}

}  // namespace tt
