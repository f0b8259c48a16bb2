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

}  // namespace tt::cli
