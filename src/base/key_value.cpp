#include "syntorch/base/key_value.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>

namespace syntorch {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<KeyValue> split_key_value(std::string_view item) {
  const std::size_t eq = item.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return KeyValue{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
}

std::vector<KeyValue> parse_key_values(std::string_view text, const KeyValueFormat& f, Diagnostics& d,
                                       const std::string& where) {
  std::vector<KeyValue> out;
  std::set<std::string, std::less<>> seen;
  auto is_separator = [&](char c) {
    return f.separator == ' ' ? (c == ' ' || c == '\t' || c == '\n' || c == '\r') : c == f.separator;
  };
  std::size_t i = 0;
  while (i <= text.size()) {
    std::size_t j = i;
    while (j < text.size() && !is_separator(text[j])) ++j;
    const std::string_view item = text.substr(i, j - i);
    i = j + 1;
    if (item.empty()) continue;
    auto kv = split_key_value(item);
    if (!kv) {
      d.error(where, f.path, fmt::format("{}expected {}, got \"{}\"", f.context, f.expected, item));
      continue;
    }
    if (!seen.insert(kv->key).second) {
      if (f.keys_are_paths) {
        d.error(where, kv->key, fmt::format("{}given twice", f.context));
      } else {
        d.error(where, f.path, fmt::format("{}{} given twice", f.context, kv->key));
      }
      continue;
    }
    out.push_back(std::move(*kv));
  }
  return out;
}

}  // namespace syntorch
