#include <fmt/format.h>

#include <array>
#include <cctype>
#include <map>
#include <set>

#include "components.hpp"

namespace syntorch::hw::detail {

std::span<const ComponentType> component_types() {
  static constexpr std::array<ComponentType, 8> kTypes{{
      {"compute", "processing units (SMs, CUs) with per-dtype throughput", &parse_compute},
      {"memory", "device main memory (HBM)", &parse_memory},
      {"cache", "on-device cache (L2)", &parse_cache},
      {"host", "host CPU costs: op dispatch, kernel launch, synchronisation", &parse_host},
      {"link", "full-duplex connection between two endpoints (NVLink, PCIe, network)", &parse_link},
      {"switch", "switch joining links (NVSwitch, PCIe or network switch)", &parse_switch},
      {"group", "components instantiated count times; a device when it holds a compute", &parse_group},
      {"collective", "a device's collective-communication library: step latency, pipeline chunk", &parse_collective},
  }};
  return kTypes;
}

namespace {
bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}
}  // namespace

namespace {

// A group may list its members by name instead of holding them (the design's own form:
// "components": ["sm_group", "memory_hierarchy"]); the members are written beside it, in the same
// components map, and are parsed where they are written (so errors name their own paths).
bool lists_members(const Json& body) {
  if (!body.is_object()) return false;
  const auto type = body.find("type");
  const auto members = body.find("components");
  return type != body.end() && *type == "group" && members != body.end() && members->is_array();
}

class ComponentsParser {
 public:
  ComponentsParser(const Json& map, const std::string& pointer, ParseContext& ctx)
      : map_(map), pointer_(pointer), ctx_(ctx) {}

  void run(GroupSpec& out) {
    find_owners();
    for (auto it = map_.begin(); it != map_.end(); ++it) {
      if (owner_.count(it.key()) == 0) parse_one(it.key(), it.value(), out);
    }
  }

 private:
  // Which group lists each member, checked: members exist here, are listed once, and no group
  // is (through others) its own member.
  void find_owners() {
    std::vector<std::string> names;
    for (auto it = map_.begin(); it != map_.end(); ++it) names.push_back(it.key());
    for (auto it = map_.begin(); it != map_.end(); ++it) {
      if (!lists_members(it.value())) continue;
      const Json& members = it.value().at("components");
      const std::string list_path = child_pointer(child_pointer(pointer_, it.key()), "components");
      for (std::size_t i = 0; i < members.size(); ++i) {
        const std::string at = child_pointer(list_path, i);
        if (!members[i].is_string()) {
          ctx_.error(at, "expected the name of a component written beside the group, got " + describe_json(members[i]));
          continue;
        }
        const std::string member = members[i].get<std::string>();
        if (!map_.contains(member)) {
          ctx_.error(at, fmt::format("names \"{}\", which is not a component of {}{} (there: {})", member, pointer_,
                                     did_you_mean(member, names), join(names)));
        } else if (member == it.key()) {
          ctx_.error(at, "a group cannot list itself");
        } else if (auto [o, fresh] = owner_.emplace(member, it.key()); !fresh) {
          ctx_.error(at, o->second == it.key()
                             ? fmt::format("\"{}\" is listed twice", member)
                             : fmt::format("\"{}\" is already listed by group \"{}\"; a component belongs to one group",
                                           member, o->second));
        }
      }
    }
    // A chain of owners that comes back to where it started is a cycle: report it once and
    // parse none of it.
    for (const auto& [member, first_owner] : owner_) {
      std::vector<std::string> chain{member};
      for (std::string o = first_owner; owner_.count(o) > 0 && chain.size() <= owner_.size(); o = owner_.at(o)) {
        chain.push_back(o);
        if (o == member) {
          cyclic_.insert(chain.begin(), chain.end());
          ctx_.error(child_pointer(child_pointer(pointer_, first_owner), "components"),
                     fmt::format("groups list each other in a cycle: {}", join(chain, " <- ")));
          break;
        }
      }
    }
  }

  void parse_one(const std::string& name, const Json& body, GroupSpec& out) {
    const std::string path = child_pointer(pointer_, name);
    if (!valid_name(name)) {
      ctx_.error(path, fmt::format("component name \"{}\" may hold only letters, digits, '_' and '-'", name));
      return;
    }
    if (!body.is_object()) {
      ctx_.error(path, "expected a component object with a \"type\", got " + describe_json(body));
      return;
    }
    std::vector<std::string> type_names;
    for (const auto& t : component_types()) type_names.emplace_back(t.name);
    auto type_it = body.find("type");
    if (type_it == body.end()) {
      ctx_.error(path, fmt::format("missing required field \"type\" (one of: {})", join(type_names)));
      return;
    }
    if (!type_it->is_string()) {
      ctx_.error(child_pointer(path, "type"), fmt::format("expected a component type (one of: {}), got {}",
                                                          join(type_names), describe_json(*type_it)));
      return;
    }
    const std::string type = type_it->get<std::string>();
    const ComponentType* found = nullptr;
    for (const auto& t : component_types()) {
      if (t.name == type) found = &t;
    }
    if (!found) {
      ctx_.error(child_pointer(path, "type"), fmt::format("unknown component type \"{}\"{} (valid types: {})", type,
                                                          did_you_mean(type, type_names), join(type_names)));
      return;
    }
    ComponentSpec spec;
    spec.name = name;
    spec.json_path = path;
    ObjectReader reader(body, path, ctx_, fmt::format("a {} component", type));
    reader.raw("type");
    reader.strings("notes", false);  // sources and assumptions behind the numbers
    found->parse(reader, spec);
    reader.finish();
    if (lists_members(body) && cyclic_.count(name) == 0) {
      auto& group = std::get<GroupSpec>(spec.body);
      std::set<std::string> placed;  // a name listed twice is placed once (and reported above)
      for (const Json& member : body.at("components")) {
        if (!member.is_string()) continue;
        const auto o = owner_.find(member.get<std::string>());
        if (o != owner_.end() && o->second == name && placed.insert(o->first).second) {
          parse_one(o->first, map_.at(o->first), group);
        }
      }
    }
    out.components.push_back(std::move(spec));
  }

  const Json& map_;
  const std::string& pointer_;
  ParseContext& ctx_;
  std::map<std::string, std::string> owner_;  // member -> the group that lists it
  std::set<std::string> cyclic_;
};

}  // namespace

void parse_components(const Json& map, const std::string& pointer, ParseContext& ctx, GroupSpec& out) {
  if (!map.is_object()) {
    ctx.error(pointer, "expected an object mapping component names to components, got " + describe_json(map));
    return;
  }
  ComponentsParser(map, pointer, ctx).run(out);
}

HardwareConfig parse_config(const Json& doc, ParseContext& ctx) {
  HardwareConfig config;
  ObjectReader r(doc, "", ctx, "a hardware config");
  config.name = r.string("name", true).value_or("");
  config.notes = r.strings("notes", false).value_or(std::vector<std::string>{});
  if (const Json* components = r.raw("components")) {
    parse_components(*components, "/components", ctx, config.root);
  } else {
    ctx.error("", "missing required field \"components\" (an object mapping names to components)");
  }
  r.finish();
  return config;
}

}  // namespace syntorch::hw::detail
