#include "tools/cli/parse_hints.h"

#include <string>

#include "base/suggest.h"

namespace tt::cli {

namespace {

std::vector<const CLI::App*> named_commands(const CLI::App& cmd) {
  return cmd.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); });
}

// "--name" for every long option of `cmd`, its option groups (nameless subcommands) included.
void long_names(const CLI::App& cmd, std::vector<std::string>& out) {
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
  }
  for (const CLI::App* g : cmd.get_subcommands([](const CLI::App* s) { return s->get_name().empty(); }))
    long_names(*g, out);
}

// The option called `name` ("--x" or "-x") on `cmd` or a command above it, or null.
const CLI::Option* find_option(const CLI::App* cmd, const std::string& name) {
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    if (const CLI::Option* o = cmd->get_option_no_throw(name)) return o;
  }
  return nullptr;
}

// "train", "bench allreduce": the words that name `cmd` after the program's name.
std::string words_of(const CLI::App& cmd) {
  if (cmd.get_parent() == nullptr) return "";
  const std::string above = words_of(*cmd.get_parent());
  return above.empty() ? cmd.get_name() : above + " " + cmd.get_name();
}

std::string unknown_command(const CLI::App& parent, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* s : named_commands(parent)) names.push_back(s->get_name());
  const std::string above = words_of(parent);
  const std::string prefix = above.empty() ? "" : above + " ";
  std::string msg = "unknown command '" + prefix + word + "'";
  if (const auto near = closest_match(word, names)) msg += "; did you mean '" + prefix + *near + "'?";
  return msg + " (teetrain " + prefix + "--help lists them)";
}

std::string unknown_option(const CLI::App& cmd, const std::string& name) {
  std::vector<std::string> names;
  long_names(cmd, names);
  std::string msg = "unknown option " + name;
  if (const auto near = closest_match(name, names)) return msg + "; did you mean " + *near + "?";
  return msg + " (teetrain " + words_of(cmd) + " --help lists the options)";
}

}  // namespace

namespace {

// What a walk over the words looks for: an unknown command or option (after CLI11 failed), or an empty
// word (before parsing: CLI11 would loop on it).
enum class Look { Unknown, Empty };

// Walks `args` as CLI11 will, command by command, skipping options' values, and returns the first
// problem of the kind looked for. Looking for empty words, an unknown word is passed over (CLI11 names it).
std::optional<std::string> first_problem(const CLI::App& app, const std::vector<std::string>& args,
                                         Look look) {
  const CLI::App* cmd = &app;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& tok = args[i];
    if (tok == "--") return std::nullopt;  // everything after it is positional
    if (tok.empty() && look == Look::Empty)
      return "word " + std::to_string(i + 1) + " of the command line is empty ('') where teetrain " +
             words_of(*cmd) + (cmd == &app ? "" : " ") +
             "expects an option or a command; remove it (a shell variable that expanded to nothing?)";
    if (tok.size() > 1 && tok[0] == '-') {
      const std::size_t eq = tok.find('=');
      const std::string name = tok.substr(0, eq);
      const CLI::Option* o = find_option(cmd, name);
      if (o == nullptr) {
        if (name.starts_with("--") && look == Look::Unknown) return unknown_option(*cmd, name);
        continue;  // a short option or a negative number: CLI11 says what is wrong with it
      }
      if (eq == std::string::npos && o->get_expected_min() > 0) ++i;  // skip its value
      continue;
    }
    bool found = false;
    for (const CLI::App* s : named_commands(*cmd)) {
      if (s->check_name(tok)) {
        cmd = s;
        found = true;
        break;
      }
    }
    if (!found && cmd->get_require_subcommand_min() > 0 && look == Look::Unknown)
      return unknown_command(*cmd, tok);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> explain_parse_error(const CLI::App& app, const std::vector<std::string>& args) {
  return first_problem(app, args, Look::Unknown);
}

std::optional<std::string> empty_word(const CLI::App& app, const std::vector<std::string>& args) {
  return first_problem(app, args, Look::Empty);
}

}  // namespace tt::cli
