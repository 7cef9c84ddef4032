#include "syntorch/runtime/op_params.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "ops/op_type.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime {

std::vector<std::string> op_param_keys(OpKind kind) {
  std::vector<std::string> keys;
  for (const OpParam& p : op_type(kind).params) keys.emplace_back(p.key);
  return keys;
}

namespace {
std::vector<std::pair<std::string, std::string>> params_help(bool flags) {
  std::vector<std::pair<std::string, std::string>> all;
  for (const OpType* t : op_types()) {
    for (const OpParam& p : t->params) {
      if ((p.flag != nullptr) != flags) continue;
      const bool seen = std::any_of(all.begin(), all.end(), [&](const auto& kv) { return kv.first == p.key; });
      if (!seen) all.emplace_back(std::string(p.key), std::string(p.help));
    }
  }
  if (!flags) {
    std::string help = "uneven sizes, colon-separated (1:1:512)";
    for (const OpType* t : op_types()) {
      if (!t->splits_help.empty()) help += fmt::format("; {}: {}", t->name, t->splits_help);
    }
    all.emplace_back("splits", help);
  }
  return all;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> op_param_help() { return params_help(false); }
std::vector<std::pair<std::string, std::string>> op_flag_help() { return params_help(true); }

std::optional<std::uint64_t> parse_count(const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc{} && p == end) return v;
  if (auto bytes = units::parse_size_bytes(text); bytes && *bytes >= 0 && *bytes < 9.2e18) {
    return static_cast<std::uint64_t>(*bytes);
  }
  return std::nullopt;
}

bool op_from_params(const std::map<std::string, std::string>& params, const std::vector<std::string>& ignored,
                    OpDesc& op, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  const OpType& type = op_type(op.kind);
  const std::vector<std::string> keys = op_param_keys(op.kind);
  std::vector<std::string> valid = keys;
  valid.push_back("dtype");
  if (!type.splits_help.empty()) valid.push_back("splits");
  for (const auto& [raw_key, value] : params) {
    std::string key = raw_key;
    std::replace(key.begin(), key.end(), '-', '_');
    if (std::find(ignored.begin(), ignored.end(), key) != ignored.end()) continue;
    if (key == "dtype") {
      if (auto t = parse_dtype(value)) {
        op.dtype = *t;
      } else {
        d.error(where, "dtype", fmt::format("unknown dtype \"{}\"{} (valid: {})", value, did_you_mean(value, dtype_names()),
                                            join(dtype_names())));
      }
      continue;
    }
    if (key == "splits" && !type.splits_help.empty()) {
      // Colon-separated counts: 1:1:512 (as many as the op's shape implies; its check says so).
      op.splits.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t end = std::min(value.find(':', start), value.size());
        const auto n = parse_count(value.substr(start, end - start));
        if (!n) {
          d.error(where, key, fmt::format("expected colon-separated non-negative integers ({}), got \"{}\"",
                                          type.splits_help, value));
          break;
        }
        op.splits.push_back(*n);
        start = end + 1;
      }
      continue;
    }
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::vector<std::string> all = valid;
      all.insert(all.end(), ignored.begin(), ignored.end());
      d.error(where, key, fmt::format("{} takes no parameter \"{}\"{} (valid: {})", op_name(op.kind), key,
                                      did_you_mean(key, all), join(all)));
      continue;
    }
    const OpParam& param = *std::find_if(type.params.begin(), type.params.end(),
                                         [&](const OpParam& p) { return p.key == key; });
    if (param.flag != nullptr) {
      if (value == "true" || value == "1") {
        op.*param.flag = true;
      } else if (value == "false" || value == "0") {
        op.*param.flag = false;
      } else {
        d.error(where, key, fmt::format("expected true or false, got \"{}\"", value));
      }
      continue;
    }
    const auto v = parse_count(value);
    if (!v) {
      d.error(where, key, fmt::format("expected a non-negative integer{}, got \"{}\"",
                                      key == "bytes" ? " or a size like \"64 MiB\"" : "", value));
      continue;
    }
    if (param.max != 0 && *v > param.max) {
      d.error(where, key, fmt::format("expected at most {} {}, got {}", param.max, key, *v));
      continue;
    }
    op.*param.count = *v;
  }
  if (type.defaults != nullptr) type.defaults(op);
  if (d.size() != before) return false;
  return validate_op(op, d, where);
}

}  // namespace syntorch::runtime
