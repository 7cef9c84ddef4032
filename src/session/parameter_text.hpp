#pragma once
// Reading a parameter's text, as the parameter tables do: each returns the value, or reports what
// was expected under `where` and `key` and returns nothing.

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"
#include "syntorch/base/key_value.hpp"

namespace syntorch::session::detail {

// Integers from `least` up to 2^30 (every size a run takes is far below it).
inline std::optional<std::int64_t> integer_of(const std::string& text, std::int64_t least, Diagnostics& d,
                                              const std::string& where, std::string_view key) {
  const std::optional<std::int64_t> v = parse_integer(text);
  if (!v || *v < least || *v > (1 << 30)) {
    const std::string what = least == 0   ? "a non-negative integer"
                             : least == 1 ? "a positive integer"
                                          : fmt::format("an integer of at least {}", least);
    d.error(where, std::string(key), fmt::format("expected {}, got \"{}\"", what, text));
    return std::nullopt;
  }
  return v;
}

// The index of `text` among `options`.
inline std::optional<int> choice_of(const std::string& text, std::initializer_list<const char*> options, Diagnostics& d,
                                    const std::string& where, std::string_view key) {
  int i = 0;
  std::vector<std::string> names;
  for (const char* o : options) {
    if (text == o) return i;
    names.emplace_back(o);
    ++i;
  }
  d.error(where, std::string(key),
          fmt::format("expected one of {}, got \"{}\"{}", join(names), text, did_you_mean(text, names)));
  return std::nullopt;
}

// true|false, or 1|0 as measurement rows write them.
inline std::optional<bool> boolean_of(const std::string& text, Diagnostics& d, const std::string& where,
                                      std::string_view key) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  d.error(where, std::string(key), fmt::format("expected true or false, got \"{}\"", text));
  return std::nullopt;
}

inline std::optional<DType> dtype_of(const std::string& text, Diagnostics& d, const std::string& where,
                                     std::string_view key) {
  if (auto t = parse_dtype(text)) return t;
  d.error(where, std::string(key), fmt::format("unknown dtype \"{}\"{} (valid: {})", text, did_you_mean(text, dtype_names()),
                                               join(dtype_names())));
  return std::nullopt;
}

}  // namespace syntorch::session::detail
