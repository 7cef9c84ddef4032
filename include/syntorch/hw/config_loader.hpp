#pragma once
// Loading hardware configs: read the JSON file, resolve `extends` (a path relative to the file
// that names it; objects merge key by key, anything else is replaced, null deletes), apply
// `--set /json/pointer=value` overrides, then parse and validate into a HardwareConfig
// (Machine::load does all of it and elaborates the result).
// Every problem found is collected and thrown together as an InputError.

#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/config.hpp"

namespace syntorch::hw {

// One `--set` override: a JSON pointer and the value text. The value is read as JSON when it
// parses as JSON (numbers, true/false, quoted strings, objects) and as a plain string otherwise,
// so `--set /components/gpu/components/hbm/bandwidth=6.7 TB/s` works without extra quoting.
struct Override {
  std::string pointer;
  std::string value_text;
};

// Splits "/a/b=value" at the first '='; adds a diagnostic (naming the flag) when malformed.
std::vector<Override> parse_overrides(const std::vector<std::string>& args, Diagnostics& diagnostics);

// The value of one field of a config as it loads (extends and nested groups resolved): a JSON
// number as its text, a string as itself. Adds a problem naming the file and pointer (and
// returns nothing) when the config does not load or the field is absent or not a number or a
// quantity string.
std::optional<std::string> config_field(const std::string& file, const std::string& pointer,
                                        Diagnostics& diagnostics);

}  // namespace syntorch::hw
