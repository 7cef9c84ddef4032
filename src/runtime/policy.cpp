#include "syntorch/runtime/policy.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectives/collectives.hpp"
#include "ops/op_type.hpp"
#include "syntorch/base/input_file.hpp"
#include "syntorch/base/key_value.hpp"
#include "syntorch/base/yaml.hpp"

namespace syntorch::runtime {

std::vector<std::string> KernelPolicy::implementations(OpKind op) {
  const auto impls = op_type(op).implementations;
  return {impls.begin(), impls.end()};
}

const PolicyEntry& KernelPolicy::entry(OpKind op) const {
  static const PolicyEntry kAuto{};
  auto it = entries_.find(op);
  return it == entries_.end() ? kAuto : it->second;
}

void KernelPolicy::set(OpKind op, PolicyEntry entry) {
  entries_[op] = std::move(entry);
  followers_.erase(op);
  // A backward not named follows its forward's implementation (attention=unfused: autograd
  // through the unfused ops), where it has that implementation; not its precision (an fp8
  // forward's backward runs in the backward's own dtype).
  for (OpKind f : followers_) entries_.erase(f);
  followers_.clear();
  std::vector<std::pair<OpKind, std::string>> follow;
  for (const auto& [forward, e] : entries_) {
    const auto backward = parse_op(std::string(op_name(forward)) + "_backward");
    if (!backward || entries_.count(*backward)) continue;
    const auto impls = implementations(*backward);
    if (std::find(impls.begin(), impls.end(), e.impl) != impls.end()) follow.emplace_back(*backward, e.impl);
  }
  for (auto& [backward, impl] : follow) {
    entries_[backward] = PolicyEntry{std::move(impl), std::nullopt, std::nullopt};
    followers_.insert(backward);
  }
}

std::string KernelPolicy::describe() const {
  std::vector<std::string> parts;
  for (const auto& [op, e] : entries_) {
    if (followers_.count(op)) continue;
    parts.push_back(e.precision  ? fmt::format("{}={}:{}", op_name(op), e.impl, dtype_name(*e.precision))
                    : e.protocol ? fmt::format("{}={}:{}", op_name(op), e.impl, *e.protocol)
                                 : fmt::format("{}={}", op_name(op), e.impl));
  }
  return join(parts, ",");
}

namespace {
std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Other names for implementations, as other runtimes spell them (the xpuruntime design's): cuBLAS's
// own heuristic choice is auto's (the fastest library kernel); "torch" attention is PyTorch's own
// scaled_dot_product_attention dispatch, which auto follows (its backend switches included).
struct ImplAlias {
  OpKind op;
  std::string_view alias;
  std::string_view impl;
};
constexpr ImplAlias kImplAliases[] = {
    {OpKind::gemm, "cublas", "auto"},  {OpKind::bmm, "cublas", "auto"}, {OpKind::attention, "torch", "auto"},
    {OpKind::attention, "sdpa", "auto"},
};

// Adds op -> impl[:suffix] after checking both: the suffix is a precision for an op that computes
// and the library's protocol for a collective. Problems name `where` and `path`.
void add_entry(KernelPolicy& p, const std::string& op_text, const std::string& impl_text,
               const std::optional<std::string>& precision_text, Diagnostics& d, const std::string& where,
               const std::string& path) {
  const auto op = parse_op(op_text);
  if (!op) {
    d.error(where, path, fmt::format("unknown op \"{}\"{} (valid ops: {})", op_text, did_you_mean(op_text, op_names()),
                                     join(op_names())));
    return;
  }
  const auto impls = KernelPolicy::implementations(*op);
  for (const ImplAlias& a : kImplAliases) {
    if (a.op == *op && a.alias == impl_text) {
      add_entry(p, op_text, std::string(a.impl), precision_text, d, where, path);
      return;
    }
  }
  if (is_collective(*op)) {
    // NCCL_ALGO's names in any case (Ring, NVLS, CollNet), as NCCL reads them.
    const std::string lower = lower_case(impl_text);
    if (const auto alias = detail::algorithm_for_alias(*op, lower)) {
      add_entry(p, op_text, std::string(*alias), precision_text, d, where, path);
      return;
    }
    if (lower != impl_text && std::find(impls.begin(), impls.end(), lower) != impls.end()) {
      add_entry(p, op_text, lower, precision_text, d, where, path);
      return;
    }
  }
  if (std::find(impls.begin(), impls.end(), impl_text) == impls.end()) {
    d.error(where, path, fmt::format("unknown implementation \"{}\" for {}{} (valid: {})", impl_text, op_text,
                                     did_you_mean(impl_text, impls), join(impls)));
    return;
  }
  PolicyEntry e{impl_text, std::nullopt, std::nullopt};
  if (precision_text && is_collective(*op)) {
    // NCCL_PROTO's names, in any case: the library's protocols (simple, ll, ll128) are lower case.
    const std::string protocol = lower_case(*precision_text);
    if (protocol.empty() || protocol.find_first_of(":,= ") != std::string::npos) {
      d.error(where, path, fmt::format("expected a protocol of the collective library after {}:, such as simple, "
                                       "ll or ll128, got \"{}\"", impl_text, *precision_text));
      return;
    }
    e.protocol = protocol;
    p.set(*op, e);
    return;
  }
  if (precision_text) {
    e.precision = parse_dtype(*precision_text);
    if (!e.precision) {
      d.error(where, path, fmt::format("unknown precision \"{}\"{} (valid: {})", *precision_text,
                                       did_you_mean(*precision_text, dtype_names()), join(dtype_names())));
      return;
    }
  }
  p.set(*op, e);
}
}  // namespace

KernelPolicy KernelPolicy::parse(const std::string& text, Diagnostics& d, const std::string& where) {
  KernelPolicy p;
  KeyValueFormat format;
  format.expected = "op=implementation, e.g. gemm=cublasLt";
  for (const KeyValue& kv : parse_key_values(text, format, d, where)) {
    std::string impl = kv.value;
    std::optional<std::string> precision;
    if (const auto colon = impl.find(':'); colon != std::string::npos) {
      precision = impl.substr(colon + 1);
      impl = impl.substr(0, colon);
    }
    add_entry(p, kv.key, impl, precision, d, where, "");
  }
  return p;
}

KernelPolicy KernelPolicy::load(const std::string& text, Diagnostics& d, const std::string& where,
                                const std::string& base_dir) {
  if (text.empty()) return {};
  const std::filesystem::path file = std::filesystem::path(base_dir) / text;
  if (text.find('=') == std::string::npos) {
    if (exists_no_throw(file)) return load_file(file.string(), d);
    d.error(where, "", fmt::format("expected op=implementation,... or a JSON/YAML policy file, got \"{}\" (no such file: {})",
                                   text, file.string()));
    return {};
  }
  return parse(text, d, where);
}

KernelPolicy KernelPolicy::load_file(const std::string& path, Diagnostics& d) {
  KernelPolicy p;
  const std::optional<std::string> text =
      read_input_file(path, "a JSON or YAML kernel policy", d, "", std::uint64_t{1} << 20);
  if (!text) return p;
  // YAML is a superset of JSON, so one parser reads both (a key given twice is refused there).
  const std::optional<YAML::Node> parsed = parse_yaml(*text, path, "a JSON or YAML kernel policy", d);
  if (!parsed) return p;
  const YAML::Node& root = *parsed;
  if (!root.IsMap()) {
    d.error(path, "", "expected a map of op -> implementation, e.g. {gemm: cublasLt, attention: flash_v2}");
    return p;
  }
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) {
      d.error(path, "", fmt::format("line {}: expected an op name as the key, got a {}", kv.first.Mark().line + 1,
                                    kv.first.IsSequence() ? "list" : "map"));
      continue;
    }
    const std::string op = kv.first.as<std::string>();
    const std::string ptr = "/" + op;
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      std::string impl = v.as<std::string>();
      std::optional<std::string> suffix;
      if (const auto colon = impl.find(':'); colon != std::string::npos) {
        suffix = impl.substr(colon + 1);
        impl = impl.substr(0, colon);
      }
      add_entry(p, op, impl, suffix, d, path, ptr);
    } else if (v.IsMap()) {
      std::string impl = "auto";
      std::optional<std::string> precision;
      bool ok = true;
      for (const auto& f : v) {
        const std::string key = f.first.IsScalar() ? f.first.as<std::string>() : std::string("?");
        if ((key == "impl" || key == "precision" || key == "protocol") && !f.second.IsScalar()) {
          d.error(path, ptr + "/" + key, "expected a name, got a list or map");
          ok = false;
        } else if (key == "impl") {
          impl = f.second.as<std::string>();
        } else if (key == "precision" || key == "protocol") {
          const auto kind = parse_op(op);
          if (kind && is_collective(*kind) != (key == "protocol")) {
            d.error(path, ptr + "/" + key,
                    fmt::format("{} {}", op, key == "protocol" ? "is not a collective: it has a precision, not a protocol"
                                                               : "moves data as it is: it has a protocol, not a precision"));
            ok = false;
          } else if (precision) {
            d.error(path, ptr + "/" + key, "given with precision or protocol already");
            ok = false;
          }
          precision = f.second.as<std::string>();
        } else {
          ok = false;
          d.error(path, ptr + "/" + key, fmt::format("unknown key \"{}\"{} (valid keys: impl, precision, protocol)", key,
                                                     did_you_mean(key, {"impl", "precision", "protocol"})));
        }
      }
      if (ok) add_entry(p, op, impl, precision, d, path, ptr);
    } else {
      d.error(path, ptr, "expected an implementation name or {impl: ..., precision: ...} ({impl: ..., protocol: ...} for a collective)");
    }
  }
  return p;
}

}  // namespace syntorch::runtime
