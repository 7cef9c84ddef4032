#pragma once
// Reading a whole input file (a hardware config, a policy, a study, a measurements CSV) after
// checking that it is one: a regular file (symlinks followed) of at most `max_bytes`. A FIFO,
// /dev/zero or a folder given where a file belongs would block, never end, or fail obscurely:
// each is refused with a message naming the path and what it is.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch {

inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{64} << 20;

// The file's bytes, or nullopt with one problem added under `where` (the path when empty), e.g.
// "runs/x.json: is a FIFO, not a regular file (expected a JSON config)". `kind` names what was
// expected ("a JSON config").
std::optional<std::string> read_input_file(const std::string& path, std::string_view kind, Diagnostics& diagnostics,
                                           const std::string& where = "",
                                           std::uint64_t max_bytes = kMaxInputFileBytes);

// Whether something is at `path`; false, never an exception, when it cannot even be looked up
// (a symlink loop, a name too long).
bool exists_no_throw(const std::filesystem::path& path);

// Why `path` cannot be read as an input file ("" when it can): missing, not regular, too big.
std::string input_file_problem(const std::string& path, std::string_view kind,
                               std::uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace syntorch
