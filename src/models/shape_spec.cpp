#include "shape_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include "syntorch/base/key_value.hpp"

namespace syntorch::models {

std::optional<std::map<std::string, std::int64_t>> parse_shape_spec(const std::string& spec, std::string_view prefix,
                                                                    std::span<const ShapeKey> keys, Diagnostics& d,
                                                                    const std::string& where) {
  std::vector<std::string> names;
  for (const ShapeKey& k : keys) names.emplace_back(k.name);
  std::map<std::string, std::int64_t> values;
  std::set<std::string> given;
  const std::size_t before = d.size();
  // The spec as messages quote it: cut once, so a pasted megabyte costs one copy, not one a key.
  const std::string shown = clip(spec, 200);
  KeyValueFormat format;
  format.context = fmt::format("model \"{}\": ", shown);
  for (const KeyValue& kv : parse_key_values(std::string_view(spec).substr(prefix.size()), format, d, where)) {
    const auto key = std::find_if(keys.begin(), keys.end(), [&](const ShapeKey& k) { return k.name == kv.key; });
    if (key == keys.end()) {
      d.error(where, "", fmt::format("model \"{}\": unknown key \"{}\"{} (valid: {})", shown, kv.key,
                                     did_you_mean(kv.key, names), join(names)));
      continue;
    }
    given.insert(kv.key);
    const std::string& text = kv.value;
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || p != text.data() + text.size() || v <= 0) {
      d.error(where, "", fmt::format("model \"{}\": {} expects a positive integer, got \"{}\"", shown, kv.key, text));
    } else if (v > key->most) {
      d.error(where, "", fmt::format("model \"{}\": {} must be at most {}, got {}", shown, kv.key, key->most, text));
    } else {
      values[kv.key] = v;
    }
  }
  for (const ShapeKey& k : keys) {
    if (k.required && !given.count(std::string(k.name))) {
      d.error(where, "", fmt::format("model \"{}\": missing {}=", shown, k.name));
    }
  }
  if (d.size() != before) return std::nullopt;
  return values;
}

}  // namespace syntorch::models
