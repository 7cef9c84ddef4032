#pragma once
// A custom model shape written on the command line ("llama:layers=2,hidden=256,heads=4,..."): one
// reader for every family, so each checks, bounds and reports its keys the same way.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::models {

struct ShapeKey {
  std::string_view name;
  std::int64_t most;  // a bound past every published model by far, so a typo cannot start a run of days
  bool required;
};

// The values after `prefix` in `spec` (which starts with it), each a positive integer within its
// key's bound; nullopt with every problem (unknown key, bad or missing value) added under `where`.
std::optional<std::map<std::string, std::int64_t>> parse_shape_spec(const std::string& spec, std::string_view prefix,
                                                                    std::span<const ShapeKey> keys,
                                                                    Diagnostics& diagnostics,
                                                                    const std::string& where);

}  // namespace syntorch::models
