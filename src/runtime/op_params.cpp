#include "syntorch/runtime/op_params.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "syntorch/base/units.hpp"

namespace syntorch::runtime {

std::vector<std::string> op_param_keys(OpKind kind) {
  switch (kind) {
    case OpKind::gemm: return {"m", "n", "k"};
    case OpKind::bmm: return {"batch", "m", "n", "k"};
    case OpKind::attention: return {"batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal"};
    case OpKind::layernorm:
    case OpKind::rmsnorm:
    case OpKind::softmax: return {"rows", "cols"};
    case OpKind::embedding: return {"tokens", "hidden", "vocab"};
    case OpKind::gelu:
    case OpKind::add:
    case OpKind::mul:
    case OpKind::copy: return {"elements"};
    default: return {"ranks", "bytes"};
  }
}

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
  const std::vector<std::string> keys = op_param_keys(op.kind);
  std::vector<std::string> valid = keys;
  valid.push_back("dtype");
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
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::vector<std::string> all = valid;
      all.insert(all.end(), ignored.begin(), ignored.end());
      d.error(where, key, fmt::format("{} takes no parameter \"{}\"{} (valid: {})", op_name(op.kind), key,
                                      did_you_mean(key, all), join(all)));
      continue;
    }
    if (key == "causal") {
      if (value == "true" || value == "1") {
        op.causal = true;
      } else if (value == "false" || value == "0") {
        op.causal = false;
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
    if (key == "m") op.m = *v;
    else if (key == "n") op.n = *v;
    else if (key == "k") op.k = *v;
    else if (key == "batch") op.batch = *v;
    else if (key == "heads") op.heads = *v;
    else if (key == "kv_heads") op.kv_heads = *v;
    else if (key == "seq_q") op.seq_q = *v;
    else if (key == "seq_kv") op.seq_kv = *v;
    else if (key == "head_dim") op.head_dim = *v;
    else if (key == "rows" || key == "tokens") op.rows = *v;
    else if (key == "cols" || key == "hidden") op.cols = *v;
    else if (key == "vocab") op.vocab = *v;
    else if (key == "elements") op.elements = *v;
    else if (key == "bytes") op.bytes = *v;
    else if (key == "ranks") {
      if (*v > 4096) {
        d.error(where, key, fmt::format("expected at most 4096 ranks, got {}", *v));
      } else {
        op.ranks = static_cast<std::uint32_t>(*v);
      }
    }
  }
  // Attention without kv_heads means multi-head attention (kv_heads = heads).
  if (op.kind == OpKind::attention && op.kv_heads == 0) op.kv_heads = op.heads;
  if (d.size() != before) return false;
  return validate_op(op, d, where);
}

}  // namespace syntorch::runtime
