// What a student mistyped, said in one line with the closest correct spelling: an unknown command
// ("unknown command 'trian'; did you mean 'train'? ...") or an unknown option of the command it was
// given to ("unknown option --stpes; did you mean --steps?"). CLI11's own messages say only that
// something was not expected, or that a subcommand is required.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tt::cli {

// After a parse error: the one-line explanation of the first unknown command or option in `args`
// (argv without the program name), or nullopt when neither is the cause (CLI11's message stands).
std::optional<std::string> explain_parse_error(const CLI::App& app, const std::vector<std::string>& args);

// Before parsing: the one-line error for an empty word ('') where a command or an option belongs (not an
// option's value), or nullopt. The CLI11 this builds with loops forever on such a word after a command.
std::optional<std::string> empty_word(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace tt::cli
