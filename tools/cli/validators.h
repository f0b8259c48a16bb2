// Number validators with messages a user can act on (CLI11's own range checks print DBL_MAX).
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/transport/shm_channel.h"
#include "engine/run_choices.h"

namespace tt::cli {

// A number that `ok` accepts, else the message `rule` (e.g. "must be greater than 0") with the value.
template <typename Ok>
CLI::Validator number_where(Ok ok, std::string rule, std::string label) {
  return CLI::Validator(
      [ok, rule](std::string& s) -> std::string {
        try {
          std::size_t pos = 0;
          const double v = std::stod(s, &pos);
          if (pos != s.size()) return "'" + s + "' is not a number";
          if (!ok(v)) return rule + " (got " + s + ")";
        } catch (const std::exception&) {
          return "'" + s + "' is not a number";
        }
        return {};
      },
      std::move(label));
}

inline CLI::Validator positive() {
  return number_where([](double v) { return v > 0; }, "must be greater than 0", "POSITIVE");
}

inline CLI::Validator non_negative() {
  return number_where([](double v) { return v >= 0; }, "must be 0 or more", "NON-NEGATIVE");
}

// A SHA-256 digest as 64 hex digits (either case; the engine compares them in lower case).
inline CLI::Validator sha256_hex() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const bool hex = s.size() == 64 && std::all_of(s.begin(), s.end(),
                                                       [](unsigned char c) { return std::isxdigit(c) != 0; });
        return hex ? std::string() : "'" + s + "' is not a SHA-256 digest (64 hex digits)";
      },
      "SHA256");
}

// A byte count, plain or with a binary suffix as the docs write sizes: 65536, 64K, 64KiB, 16M, 1G
// (K = 1024). Refused unless greater than 0.
template <typename T>
CLI::Option* add_bytes_option(CLI::App* g, const std::string& flag, T& target,
                              const std::string& description) {
  return g->add_option(flag, target, description + " (bytes; suffixes K, M, G = 1024, 1024^2, 1024^3)")
      ->transform(CLI::AsSizeValue(false))
      ->check(positive())
      ->capture_default_str();
}

// An option spelled as one of an enum's names (engine/run_choices.h EnumNames), stored in `target` (the
// enum, or a std::optional of it whose default is decided later): the help lists the names and shows
// `default_name`; anything else is refused naming the choices.
template <typename E, typename Target>
CLI::Option* add_enum_choice(CLI::App* g, const std::string& flag, Target& target,
                             const std::string& description, const std::string& default_name) {
  std::vector<std::string> names;
  for (const auto& [n, e] : EnumNames<E>::all) names.emplace_back(n);
  return g
      ->add_option_function<std::string>(
          flag, [&target](const std::string& v) { target = *parse_enum<E>(v); }, description)
      ->check(CLI::IsMember(names))
      ->default_str(default_name);
}

template <typename E>
CLI::Option* add_enum_option(CLI::App* g, const std::string& flag, E& target,
                             const std::string& description) {
  return add_enum_choice<E>(g, flag, target, description, enum_name(target));
}

// The same for a choice whose default is decided later (std::nullopt until given; the help says "auto").
template <typename E>
CLI::Option* add_enum_option(CLI::App* g, const std::string& flag, std::optional<E>& target,
                             const std::string& description) {
  return add_enum_choice<E>(g, flag, target, description, "auto");
}

// --allreduce-algo as train spells it: one of our algorithms, or "auto" (none: the cost model's pick per
// bucket, comm/allreduce/allreduce_algo.h).
inline CLI::Option* add_algo_option(CLI::App* g, std::optional<comm::ReduceAlgo>& target,
                                    const std::string& description) {
  std::vector<std::string> names{comm::kAutoAlgo};
  for (const auto& [n, e] : EnumNames<comm::ReduceAlgo>::all) names.emplace_back(n);
  return g
      ->add_option_function<std::string>(
          "--allreduce-algo", [&target](const std::string& v) { comm::parse_algo(v, target); }, description)
      ->check(CLI::IsMember(names))
      ->default_str(comm::algo_name(target));
}

// --host-transport, as train and bench allreduce share it (the inline limit from ShmLayout's default).
inline CLI::Option* add_host_transport_option(CLI::App* g, comm::HostTransport& target) {
  return add_enum_option(
      g, "--host-transport", target,
      "How ranks on one host exchange messages: shm, through shared-memory channels (a message of up to " +
          std::to_string(comm::ShmLayout{}.slot_bytes / 1024) +
          " KiB is one copy into a queue slot; a longer one the receiver copies straight from the sender's "
          "memory where the host allows it (process_vm_readv), else through MPI); mpi, through MPI's "
          "point-to-point path (the baseline). Ranks on other hosts always use MPI");
}

// on|off as a bool.
inline CLI::Option* add_on_off_option(CLI::App* g, const std::string& flag, bool& target,
                                      const std::string& description) {
  return g
      ->add_option_function<std::string>(
          flag, [&target](const std::string& v) { target = v == "on"; }, description)
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str(target ? "on" : "off");
}

}  // namespace tt::cli
