#include "json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <fmt/format.h>

#include "syntorch/base/units.hpp"

namespace syntorch::hw::detail {

std::string ParseContext::where(const std::string& pointer) const {
  std::string p = pointer;
  for (;;) {
    auto it = origin.find(p);
    if (it != origin.end()) return it->second;
    if (p.empty()) return top_file;
    p.erase(p.rfind('/'));
  }
}

void ParseContext::error(const std::string& pointer, std::string message) {
  diagnostics.error(where(pointer), pointer, std::move(message));
}

ObjectReader::ObjectReader(const Json& object, std::string pointer, ParseContext& ctx, std::string what)
    : object_(object), pointer_(std::move(pointer)), ctx_(ctx), what_(std::move(what)) {}

void ObjectReader::error(std::string_view key, std::string message) {
  ctx_.error(key.empty() ? pointer_ : child_pointer(pointer_, key), std::move(message));
}

const Json* ObjectReader::raw(std::string_view key) {
  known_.emplace_back(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

const Json* ObjectReader::lookup(std::string_view key, bool required, std::string_view expected) {
  const Json* v = raw(key);
  if (!v && required) {
    ctx_.error(pointer_, fmt::format("missing required field \"{}\" ({}) in {}", key, expected, what_));
  }
  return v;
}

std::optional<double> ObjectReader::quantity(std::string_view key, bool required, std::string_view kind,
                                             std::string_view example,
                                             std::optional<double> (*parse)(std::string_view), bool allow_zero,
                                             const Range& range) {
  const std::string expected = fmt::format("a {} like \"{}\"", kind, example);
  const Json* v = lookup(key, required, expected);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    error(key, fmt::format("expected {}, got {}", expected, describe_json(*v)));
    return std::nullopt;
  }
  const auto& text = v->get_ref<const std::string&>();
  const std::optional<double> value = parse(text);
  if (!value) {
    error(key, fmt::format("expected {}, got \"{}\"", expected, text));
    return std::nullopt;
  }
  if (*value < 0 || (!allow_zero && *value == 0)) {
    error(key, fmt::format("{} must be {}, got \"{}\"", kind, allow_zero ? "zero or more" : "positive", text));
    return std::nullopt;
  }
  if ((*value != 0 && *value < range.min) || *value > range.max) {
    error(key, fmt::format("{} must be {} (beyond that no simulated run is meaningful), got \"{}\"", kind,
                           range.text, text));
    return std::nullopt;
  }
  return value;
}

std::optional<double> ObjectReader::bandwidth(std::string_view key, bool required) {
  return quantity(key, required, "bandwidth", "3.35 TB/s", &units::parse_bandwidth_bytes_per_s, false,
                  {1e6, 1e18, "between 1 MB/s and 1 EB/s"});
}
std::optional<double> ObjectReader::size(std::string_view key, bool required) {
  // A plain number is a count of bytes (the design's own form: "size": 16777216).
  if (auto it = object_.find(key); it != object_.end() && it->is_number()) {
    known_.emplace_back(key);
    const bool whole = it->is_number_integer();
    const double bytes = it->get<double>();
    if (!whole) {
      error(key, fmt::format("expected a size like \"80 GiB\" or a whole number of bytes, got {}", describe_json(*it)));
      return std::nullopt;
    }
    if (bytes <= 0 || bytes > 0x1p50) {
      error(key, fmt::format("size must be positive and at most 1 PiB, got {} bytes", describe_json(*it)));
      return std::nullopt;
    }
    return bytes;
  }
  return quantity(key, required, "size", "80 GiB", &units::parse_size_bytes, false,
                  {0, 0x1p50, "at most 1 PiB"});
}

std::optional<std::uint64_t> ObjectReader::address(std::string_view key, bool required) {
  const std::string expected = "an address: a whole number of bytes or a hexadecimal string like \"0x7f0000000000\"";
  const Json* v = lookup(key, required, expected);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned() || (v->is_number_integer() && v->get<std::int64_t>() >= 0)) {
    return v->get<std::uint64_t>();
  }
  if (v->is_string()) {
    const std::string& text = v->get_ref<const std::string&>();
    if (text.size() > 2 && text.size() <= 18 && (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0) &&
        text.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos) {
      return std::stoull(text.substr(2), nullptr, 16);
    }
  }
  error(key, fmt::format("expected {}, got {}", expected, describe_json(*v)));
  return std::nullopt;
}
std::optional<double> ObjectReader::frequency(std::string_view key, bool required) {
  return quantity(key, required, "frequency", "1.83 GHz", &units::parse_frequency_hz, false,
                  {1e6, 1e12, "between 1 MHz and 1 THz"});
}
std::optional<double> ObjectReader::time(std::string_view key, bool required) {
  return quantity(key, required, "time", "2 us", &units::parse_time_s, true, {0, 10, "at most 10 s"});
}

std::optional<std::uint32_t> ObjectReader::count(std::string_view key, bool required, std::uint32_t min_value) {
  const std::string expected = fmt::format("an integer >= {}", min_value);
  const Json* v = lookup(key, required, expected);
  if (!v) return std::nullopt;
  bool ok = v->is_number_integer();
  if (ok) {
    const std::int64_t i = v->is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                         v->get<std::uint64_t>(), 1ULL << 62))
                                                   : v->get<std::int64_t>();
    ok = i >= static_cast<std::int64_t>(min_value) && i <= 1'000'000'000;
  }
  if (!ok) {
    error(key, fmt::format("expected {}, got {}", expected, describe_json(*v)));
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(v->get<std::int64_t>());
}

std::optional<double> ObjectReader::number(std::string_view key, bool required, double min_exclusive) {
  const std::string expected = fmt::format("a number > {}", min_exclusive);
  const Json* v = lookup(key, required, expected);
  if (!v) return std::nullopt;
  if (!v->is_number() || !(v->get<double>() > min_exclusive) || !std::isfinite(v->get<double>())) {
    error(key, fmt::format("expected {}, got {}", expected, describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<double> ObjectReader::fraction(std::string_view key, bool required) {
  const Json* v = lookup(key, required, "a fraction in (0, 1]");
  if (!v) return std::nullopt;
  if (!v->is_number() || !(v->get<double>() > 0) || v->get<double>() > 1) {
    error(key, fmt::format("expected a fraction in (0, 1], got {}", describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<double> ObjectReader::share(std::string_view key, bool required) {
  const Json* v = lookup(key, required, "a share in [0, 1]");
  if (!v) return std::nullopt;
  if (!v->is_number() || !(v->get<double>() >= 0) || v->get<double>() > 1) {
    error(key, fmt::format("expected a share in [0, 1], got {}", describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> ObjectReader::boolean(std::string_view key, bool required) {
  const Json* v = lookup(key, required, "true or false");
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    error(key, fmt::format("expected true or false, got {}", describe_json(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(std::string_view key, bool required) {
  const Json* v = lookup(key, required, "a string");
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    error(key, fmt::format("expected a string, got {}", describe_json(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> ObjectReader::strings(std::string_view key, bool required) {
  const Json* v = lookup(key, required, "a string or a list of strings");
  if (!v) return std::nullopt;
  if (v->is_string()) return std::vector<std::string>{v->get<std::string>()};
  bool ok = v->is_array();
  if (ok) {
    for (const auto& e : *v) ok = ok && e.is_string();
  }
  if (!ok) {
    error(key, fmt::format("expected a string or a list of strings, got {}", describe_json(*v)));
    return std::nullopt;
  }
  return v->get<std::vector<std::string>>();
}

void ObjectReader::finish() {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    bool known = false;
    for (const auto& k : known_) known = known || k == key;
    if (known) continue;
    ctx_.error(child_pointer(pointer_, key),
               fmt::format("unknown key \"{}\" in {}{} (valid keys: {})", key, what_, did_you_mean(key, known_),
                           join(known_)));
  }
}

}  // namespace syntorch::hw::detail
