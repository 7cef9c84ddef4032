#pragma once
// The `syntorch` command line, as a function so tests can run it in-process.
// Exit codes: 0 success, 2 bad input (flags, files, configs), 3 a simulated out-of-memory (a
// result: the plan does not fit), 1 internal error.

#include <iosfwd>
#include <string>
#include <vector>

namespace syntorch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOom = 3;

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Every subcommand as the words that name it ({"hw"}, {"hw", "show"}, {"kernel"}, ...).
std::vector<std::vector<std::string>> subcommand_paths();

}  // namespace syntorch::cli
