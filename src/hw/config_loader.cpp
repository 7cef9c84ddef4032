#include "syntorch/hw/config_loader.hpp"

#include "syntorch/base/input_file.hpp"
#include "syntorch/base/key_value.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "components/components.hpp"
#include "json_reader.hpp"

namespace syntorch::hw {

using detail::Json;
using detail::ParseContext;

namespace {

namespace fs = std::filesystem;

// Records `file` as the origin of `v` and of everything inside it.
void record_origin(const Json& v, const std::string& pointer, const std::string& file,
                   std::map<std::string, std::string>& origin) {
  origin[pointer] = file;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      record_origin(it.value(), detail::child_pointer(pointer, it.key()), file, origin);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) record_origin(v[i], detail::child_pointer(pointer, i), file, origin);
  }
}

// Merges `over` into `base`: objects key by key, null deletes, anything else replaces.
void merge(Json& base, const Json& over, const std::string& pointer, const std::string& file,
           std::map<std::string, std::string>& origin) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    const std::string child = detail::child_pointer(pointer, it.key());
    if (it.value().is_null()) {
      base.erase(it.key());
      continue;
    }
    auto existing = base.find(it.key());
    if (existing != base.end() && existing->is_object() && it.value().is_object()) {
      origin[child] = file;
      merge(*existing, it.value(), child, file, origin);
    } else {
      base[it.key()] = it.value();
      record_origin(it.value(), child, file, origin);
    }
  }
}

// Reads `file` and, recursively, what it extends. Returns false when it cannot be loaded.
bool load_document(const std::string& file, std::vector<std::string>& chain, Json& out, ParseContext& ctx) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(file, ec).string();
  for (const auto& c : chain) {
    if (c == canonical) {
      std::string cycle;
      for (const auto& x : chain) cycle += fs::path(x).filename().string() + " -> ";
      cycle += fs::path(file).filename().string();
      ctx.diagnostics.error(file, "/extends", "extends cycle: " + cycle);
      return false;
    }
  }
  const std::optional<std::string> read = read_input_file(file, "a JSON hardware config", ctx.diagnostics);
  if (!read) return false;
  const std::string& text = *read;
  std::optional<Json> parsed = parse_json_document(text, file, ctx.diagnostics);
  if (!parsed) return false;
  Json doc = std::move(*parsed);
  if (!doc.is_object()) {
    ctx.diagnostics.error(file, "", "expected a JSON object at the top level, got " + detail::describe_json(doc));
    return false;
  }
  chain.push_back(canonical);
  auto ext = doc.find("extends");
  if (ext != doc.end()) {
    if (!ext->is_string()) {
      ctx.diagnostics.error(file, "/extends", "expected a file name like \"h100_sxm5_80gb.json\", got " + detail::describe_json(*ext));
      chain.pop_back();
      return false;
    }
    const std::string base_file = (fs::path(file).parent_path() / ext->get<std::string>()).lexically_normal().string();
    if (!exists_no_throw(base_file)) {
      ctx.diagnostics.error(file, "/extends", fmt::format("extends \"{}\", which does not exist (looked for {})",
                                                          ext->get<std::string>(), base_file));
      chain.pop_back();
      return false;
    }
    if (const std::string problem = input_file_problem(base_file, "a JSON hardware config"); !problem.empty()) {
      ctx.diagnostics.error(file, "/extends", fmt::format("extends \"{}\", which {}", ext->get<std::string>(), problem));
      chain.pop_back();
      return false;
    }
    Json base;
    if (!load_document(base_file, chain, base, ctx)) {
      chain.pop_back();
      return false;
    }
    doc.erase("extends");
    merge(base, doc, "", file, ctx.origin);
    out = std::move(base);
  } else {
    record_origin(doc, "", file, ctx.origin);
    out = std::move(doc);
  }
  chain.pop_back();
  return true;
}

// A group component may take its components from another config file, as a cluster's node
// reuses a node's config: {"type": "group", "count": 2, "extends": "dgx_h100.json"}. That file's
// components (its own extends resolved) become the group's, and the component's other keys merge
// over them. Paths are relative to the file that wrote the extends.
void expand_nested(Json& components, const std::string& pointer, ParseContext& ctx, int depth) {
  if (!components.is_object()) return;
  for (auto it = components.begin(); it != components.end(); ++it) {
    Json& c = it.value();
    if (!c.is_object()) continue;
    const std::string cp = detail::child_pointer(pointer, it.key());
    auto ext = c.find("extends");
    const bool extended = ext != c.end();
    if (extended) {
      const std::string from = ctx.where(detail::child_pointer(cp, "extends"));
      if (!ext->is_string()) {
        ctx.diagnostics.error(from, cp + "/extends",
                              "expected a config file whose components this group takes, got " + detail::describe_json(*ext));
        c.erase("extends");
        continue;
      }
      if (depth >= 8) {
        ctx.diagnostics.error(from, cp + "/extends", "groups extend other configs more than 8 deep (a cycle?)");
        c.erase("extends");
        continue;
      }
      const std::string sub_file = (fs::path(from).parent_path() / ext->get<std::string>()).lexically_normal().string();
      if (!exists_no_throw(sub_file)) {
        ctx.diagnostics.error(from, cp + "/extends",
                              fmt::format("extends \"{}\", which does not exist (looked for {})", ext->get<std::string>(), sub_file));
        c.erase("extends");
        continue;
      }
      ParseContext sub_ctx;
      Json sub;
      std::vector<std::string> chain;
      if (!load_document(sub_file, chain, sub, sub_ctx)) {
        ctx.diagnostics.append(sub_ctx.diagnostics);
        c.erase("extends");
        continue;
      }
      // The included file's origins, moved under this group.
      for (const auto& [ptr, file] : sub_ctx.origin) {
        if (ptr.rfind("/components", 0) == 0) ctx.origin[cp + ptr] = file;
      }
      Json group = {{"type", "group"}, {"components", sub.contains("components") ? sub["components"] : Json::object()}};
      c.erase("extends");
      merge(group, c, cp, from, ctx.origin);
      c = std::move(group);
    }
    if (auto inner = c.find("components"); inner != c.end()) {
      expand_nested(*inner, detail::child_pointer(cp, "components"), ctx, extended ? depth + 1 : depth);
    }
  }
}

void apply_override(Json& doc, const Override& o, ParseContext& ctx) {
  const std::string where = fmt::format("--set {}={}", o.pointer, o.value_text);
  Json value;
  try {
    Diagnostics checks;
    std::optional<Json> parsed = detail::parse_json_checked(o.value_text, where, checks);
    if (!parsed) {  // too deep, or a key twice
      ctx.diagnostics.append(checks);
      return;
    }
    value = std::move(*parsed);
  } catch (const Json::exception&) {  // not JSON (or a number out of range): a plain string
    value = o.value_text;
  }
  Json::json_pointer ptr;
  try {
    ptr = Json::json_pointer(o.pointer);
  } catch (const Json::exception& e) {
    ctx.diagnostics.error(where, "", "expected a JSON pointer like /components/gpu/count");
    return;
  }
  if (ptr.empty()) {
    ctx.diagnostics.error(where, "", "cannot replace the whole document; name a field like /components/gpu/count");
    return;
  }
  const Json::json_pointer parent = ptr.parent_pointer();
  bool parent_is_object = false;
  try {
    parent_is_object = doc.contains(parent) && doc.at(parent).is_object();
  } catch (const Json::exception&) {  // e.g. an array index that is not a number
  }
  if (!parent_is_object) {
    ctx.diagnostics.error(where, "", fmt::format("{} names no object in the config", parent.to_string()));
    return;
  }
  doc[ptr] = value;
  record_origin(value, o.pointer, "--set", ctx.origin);
}

}  // namespace

std::vector<Override> parse_overrides(const std::vector<std::string>& args, Diagnostics& diagnostics) {
  std::vector<Override> out;
  for (const auto& a : args) {
    const auto kv = split_key_value(a);
    if (!kv || kv->key[0] != '/') {
      diagnostics.error("--set " + a, "", "expected /json/pointer=value, e.g. --set /components/gpu/count=4");
      continue;
    }
    out.push_back(Override{kv->key, kv->value});
  }
  return out;
}

std::optional<std::string> config_field(const std::string& file, const std::string& pointer, Diagnostics& d) {
  detail::ParseContext ctx;
  ctx.top_file = file;
  Json doc;
  std::vector<std::string> chain;
  if (!load_document(file, chain, doc, ctx)) {
    d.append(ctx.diagnostics);
    return std::nullopt;
  }
  if (auto components = doc.find("components"); components != doc.end()) expand_nested(*components, "/components", ctx, 0);
  if (!ctx.diagnostics.empty()) {
    d.append(ctx.diagnostics);
    return std::nullopt;
  }
  try {
    const Json::json_pointer ptr(pointer);
    if (!ptr.empty() && doc.contains(ptr)) {
      const Json& v = doc.at(ptr);
      if (v.is_number()) return v.dump();
      if (v.is_string()) return v.get<std::string>();
      d.error(file, pointer, "expected a number or a quantity like \"3.35 TB/s\", got " + detail::describe_json(v));
      return std::nullopt;
    }
  } catch (const Json::exception&) {
    d.error(file, pointer, "expected a JSON pointer like /components/gpu/components/hbm/bandwidth");
    return std::nullopt;
  }
  d.error(file, pointer, "no such field in the config (as loaded, with what it extends)");
  return std::nullopt;
}

namespace detail {
HardwareConfig load_and_parse(const std::string& file, const std::vector<Override>& overrides, ParseContext& ctx) {
  ctx.top_file = file;
  Json doc;
  std::vector<std::string> chain;
  if (!load_document(file, chain, doc, ctx)) return HardwareConfig{};
  if (auto components = doc.find("components"); components != doc.end()) expand_nested(*components, "/components", ctx, 0);
  for (const auto& o : overrides) apply_override(doc, o, ctx);
  HardwareConfig config = parse_config(doc, ctx);
  config.file = file;
  return config;
}
}  // namespace detail

}  // namespace syntorch::hw
