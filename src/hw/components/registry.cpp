#include <fmt/format.h>

#include <array>
#include <cctype>

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

void parse_components(const Json& map, const std::string& pointer, ParseContext& ctx, GroupSpec& out) {
  if (!map.is_object()) {
    ctx.error(pointer, "expected an object mapping component names to components, got " + describe_json(map));
    return;
  }
  std::vector<std::string> type_names;
  for (const auto& t : component_types()) type_names.emplace_back(t.name);
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string path = child_pointer(pointer, it.key());
    if (!valid_name(it.key())) {
      ctx.error(path, fmt::format("component name \"{}\" may hold only letters, digits, '_' and '-'", it.key()));
      continue;
    }
    const Json& body = it.value();
    if (!body.is_object()) {
      ctx.error(path, "expected a component object with a \"type\", got " + describe_json(body));
      continue;
    }
    auto type_it = body.find("type");
    if (type_it == body.end()) {
      ctx.error(path, fmt::format("missing required field \"type\" (one of: {})", join(type_names)));
      continue;
    }
    if (!type_it->is_string()) {
      ctx.error(child_pointer(path, "type"), fmt::format("expected a component type (one of: {}), got {}",
                                                         join(type_names), describe_json(*type_it)));
      continue;
    }
    const std::string type = type_it->get<std::string>();
    const ComponentType* found = nullptr;
    for (const auto& t : component_types()) {
      if (t.name == type) found = &t;
    }
    if (!found) {
      ctx.error(child_pointer(path, "type"), fmt::format("unknown component type \"{}\"{} (valid types: {})", type,
                                                         did_you_mean(type, type_names), join(type_names)));
      continue;
    }
    ComponentSpec spec;
    spec.name = it.key();
    spec.json_path = path;
    ObjectReader reader(body, path, ctx, fmt::format("a {} component", type));
    reader.raw("type");
    reader.strings("notes", false);  // sources and assumptions behind the numbers
    found->parse(reader, spec);
    reader.finish();
    out.components.push_back(std::move(spec));
  }
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
