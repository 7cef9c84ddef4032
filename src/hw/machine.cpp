#include "syntorch/hw/machine.hpp"

#include <fmt/format.h>
#include <limits>
#include <set>
#include <stdexcept>

#include "components/components.hpp"
#include "json_reader.hpp"
#include "route_table.hpp"

namespace syntorch::hw {

std::string_view endpoint_kind_name(EndpointKind k) {
  switch (k) {
    case EndpointKind::device: return "device";
    case EndpointKind::switch_: return "switch";
    case EndpointKind::host: return "host";
  }
  return "?";
}

// Walks the parsed config, creating instances and resolving link endpoints.
struct MachineBuilder {
  Machine& m;
  detail::ParseContext& ctx;
  std::set<std::string> reported_;  // group specs whose structure has been checked
  // A bound on what a config may make (a typo in a count should not build millions): DGX
  // SuperPODs of several thousand GPUs, their hosts and switches fit well within it.
  static constexpr std::size_t kMaxEndpoints = 65536;

  struct Scope {
    const GroupSpec* group;
    std::string prefix;  // "" or "node[1]."
  };

  static bool is_device(const GroupSpec& g) {
    for (const auto& c : g.components) {
      if (std::holds_alternative<ComputeSpec>(c.body)) return true;
    }
    return false;
  }

  std::uint32_t add_endpoint(std::string name, EndpointKind kind, std::uint32_t index) {
    const auto id = static_cast<std::uint32_t>(m.endpoints_.size());
    m.endpoint_index_.emplace(name, id);
    m.endpoints_.push_back(Endpoint{std::move(name), kind, index});
    return id;
  }

  // Devices, switches and hosts the config would create, before creating any.
  static std::uint64_t count_endpoints(const GroupSpec& g) {
    std::uint64_t n = 0;
    for (const auto& c : g.components) {
      if (auto* sub = std::get_if<GroupSpec>(&c.body)) {
        n += sub->count * (is_device(*sub) ? 1 : count_endpoints(*sub));
      } else if (std::holds_alternative<SwitchSpec>(c.body) || std::holds_alternative<HostSpec>(c.body)) {
        ++n;
      }
    }
    return n;
  }

  void add_device(const ComponentSpec& spec, const GroupSpec& g, const std::string& name) {
    Device d;
    d.name = name;
    d.spec_path = spec.json_path;
    int memories = 0;
    int caches = 0;
    int computes = 0;
    for (const auto& c : g.components) {
      if (auto* x = std::get_if<ComputeSpec>(&c.body)) {
        d.compute = *x;
        ++computes;
      } else if (auto* mem = std::get_if<MemorySpec>(&c.body)) {
        d.memory = *mem;
        ++memories;
      } else if (auto* cache = std::get_if<CacheSpec>(&c.body)) {
        d.cache = *cache;
        ++caches;
      } else if (auto* coll = std::get_if<CollectiveSpec>(&c.body)) {
        d.collective = *coll;
      }
    }
    // Report structural problems once per group spec, not once per instance.
    if (reported_.insert(spec.json_path).second) {
      for (const auto& c : g.components) {
        if (!std::holds_alternative<ComputeSpec>(c.body) && !std::holds_alternative<MemorySpec>(c.body) &&
            !std::holds_alternative<CacheSpec>(c.body) && !std::holds_alternative<CollectiveSpec>(c.body)) {
          ctx.error(c.json_path, fmt::format("a device (a group with a compute) holds only compute, memory, cache and "
                                             "collective components; \"{}\" is a {}: move it out of the device",
                                             c.name, component_type_name(c)));
        }
      }
      if (computes != 1) ctx.error(spec.json_path, fmt::format("a device needs exactly one compute component, found {}", computes));
      if (memories != 1) ctx.error(spec.json_path, fmt::format("a device (a group with a compute) needs exactly one memory component (its HBM), found {}", memories));
      if (caches > 1) ctx.error(spec.json_path, fmt::format("a device may have at most one cache component, found {}", caches));
    }
    d.endpoint = add_endpoint(name, EndpointKind::device, static_cast<std::uint32_t>(m.devices_.size()));
    m.devices_.push_back(std::move(d));
  }

  // Pass 1: instances of devices, switches and hosts.
  void instantiate(const GroupSpec& group, const std::string& prefix, bool top) {
    for (const auto& c : group.components) {
      if (auto* g = std::get_if<GroupSpec>(&c.body)) {
        for (std::uint32_t i = 0; i < g->count; ++i) {
          const std::string name = fmt::format("{}{}[{}]", prefix, c.name, i);
          if (is_device(*g)) {
            add_device(c, *g, name);
          } else {
            instantiate(*g, name + ".", false);
          }
        }
      } else if (auto* s = std::get_if<SwitchSpec>(&c.body)) {
        const std::string name = prefix + c.name;
        m.switches_.push_back(Switch{name, add_endpoint(name, EndpointKind::switch_, static_cast<std::uint32_t>(m.switches_.size())), *s});
      } else if (auto* h = std::get_if<HostSpec>(&c.body)) {
        const std::string name = prefix + c.name;
        m.hosts_.push_back(Host{name, add_endpoint(name, EndpointKind::host, static_cast<std::uint32_t>(m.hosts_.size())), *h});
      } else if (std::holds_alternative<ComputeSpec>(c.body) || std::holds_alternative<MemorySpec>(c.body) ||
                 std::holds_alternative<CacheSpec>(c.body) || std::holds_alternative<CollectiveSpec>(c.body)) {
        if (top) {
          ctx.error(c.json_path, fmt::format("a {} component must sit inside a group (the device it belongs to), "
                                             "e.g. \"gpu\": {{\"type\": \"group\", \"components\": {{...}}}}",
                                             component_type_name(c)));
        }
      }
    }
  }

  // Resolves an endpoint pattern like "gpu[*]", "gpu[3]", "node[*].nvswitch" in `scope`.
  bool resolve(const GroupSpec& scope, const std::string& prefix, const std::string& pattern,
               const std::string& pointer, std::vector<std::uint32_t>& out) {
    std::vector<std::pair<const GroupSpec*, std::string>> frontier{{&scope, prefix}};
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = pattern.find('.', start);
      const std::string segment = pattern.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      const bool last = dot == std::string::npos;
      std::string base = segment;
      std::optional<std::string> index;
      if (auto lb = segment.find('['); lb != std::string::npos) {
        if (segment.back() != ']') {
          ctx.error(pointer, fmt::format("malformed endpoint \"{}\": expected name, name[*] or name[i]", pattern));
          return false;
        }
        base = segment.substr(0, lb);
        index = segment.substr(lb + 1, segment.size() - lb - 2);
      }
      std::vector<std::pair<const GroupSpec*, std::string>> next;
      for (const auto& [group, pre] : frontier) {
        const ComponentSpec* found = nullptr;
        std::vector<std::string> names;
        for (const auto& c : group->components) {
          names.push_back(c.name);
          if (c.name == base) found = &c;
        }
        if (!found) {
          ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" names no component here{} (components: {})", pattern,
                                         base, did_you_mean(base, names), join(names)));
          return false;
        }
        const auto* g = std::get_if<GroupSpec>(&found->body);
        if (!g) {
          if (index) {
            ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" is a {}, not a group; drop the [{}]", pattern,
                                           base, component_type_name(*found), *index));
            return false;
          }
          if (!last) {
            ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" is a {}, not a group", pattern, base,
                                           component_type_name(*found)));
            return false;
          }
          if (!std::holds_alternative<SwitchSpec>(found->body) && !std::holds_alternative<HostSpec>(found->body)) {
            ctx.error(pointer, fmt::format("endpoint \"{}\": a link connects devices, switches and hosts, and \"{}\" "
                                           "is a {}; name the group that holds it", pattern, base,
                                           component_type_name(*found)));
            return false;
          }
          auto e = m.find_endpoint(pre + base);
          if (e) out.push_back(*e);
          continue;
        }
        std::vector<std::uint32_t> instances;
        if (!index) {
          if (g->count != 1) {
            ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" is a group of {}; write {}[*] for each or {}[i] "
                                           "for one", pattern, base, g->count, base, base));
            return false;
          }
          instances.push_back(0);
        } else if (*index == "*") {
          for (std::uint32_t i = 0; i < g->count; ++i) instances.push_back(i);
        } else {
          std::uint32_t i = 0;
          const bool numeric = !index->empty() && index->find_first_not_of("0123456789") == std::string::npos &&
                               index->size() < 10;
          if (numeric) i = static_cast<std::uint32_t>(std::stoul(*index));
          if (!numeric || i >= g->count) {
            ctx.error(pointer, fmt::format("endpoint \"{}\": index [{}] is not in 0..{} (or *)", pattern, *index,
                                           g->count - 1));
            return false;
          }
          instances.push_back(i);
        }
        if (!last && is_device(*g)) {
          ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" is a group of devices; a link ends at a device "
                                         "itself, like \"{}[0]\"", pattern, base, base));
          return false;
        }
        for (std::uint32_t i : instances) {
          const std::string inst = fmt::format("{}{}[{}]", pre, base, i);
          if (last) {
            if (!is_device(*g)) {
              ctx.error(pointer, fmt::format("endpoint \"{}\": \"{}\" is a group without a compute (not a device); "
                                             "name a device, switch or host inside it", pattern, base));
              return false;
            }
            if (auto e = m.find_endpoint(inst)) out.push_back(*e);
          } else {
            next.emplace_back(g, inst + ".");
          }
        }
      }
      if (last) return true;
      frontier = std::move(next);
      start = dot + 1;
    }
  }

  // Pass 2: link instances.
  void connect(const GroupSpec& group, const std::string& prefix) {
    for (const auto& c : group.components) {
      if (auto* g = std::get_if<GroupSpec>(&c.body)) {
        if (!is_device(*g)) {
          for (std::uint32_t i = 0; i < g->count; ++i) connect(*g, fmt::format("{}{}[{}].", prefix, c.name, i));
        }
        continue;
      }
      const auto* l = std::get_if<LinkSpec>(&c.body);
      if (!l || l->endpoints.size() != 2) continue;
      std::vector<std::uint32_t> a;
      std::vector<std::uint32_t> b;
      const bool ok_a = resolve(group, prefix, l->endpoints[0], l->endpoint_paths[0], a);
      const bool ok_b = resolve(group, prefix, l->endpoints[1], l->endpoint_paths[1], b);
      if (!ok_a || !ok_b || a.empty() || b.empty()) continue;
      std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
      if (l->endpoints[0] == l->endpoints[1]) {
        for (std::size_t i = 0; i < a.size(); ++i) {
          for (std::size_t j = i + 1; j < a.size(); ++j) pairs.emplace_back(a[i], a[j]);
        }
        if (pairs.empty()) {
          ctx.error(c.json_path + "/endpoints", fmt::format("link connects \"{}\" to itself", l->endpoints[0]));
          continue;
        }
      } else if (a.size() == 1 || b.size() == 1) {
        for (auto x : a) {
          for (auto y : b) pairs.emplace_back(x, y);
        }
      } else if (a.size() == b.size()) {
        for (std::size_t i = 0; i < a.size(); ++i) pairs.emplace_back(a[i], b[i]);
      } else {
        ctx.error(c.json_path + "/endpoints",
                  fmt::format("cannot pair {} instances of \"{}\" with {} of \"{}\": use one side with a single "
                              "instance (a star), equal counts (one link per pair), or the same name twice (a mesh)",
                              a.size(), l->endpoints[0], b.size(), l->endpoints[1]));
        continue;
      }
      std::size_t k = 0;
      for (auto [x, y] : pairs) {
        if (x == y) {
          ctx.error(c.json_path + "/endpoints", fmt::format("link connects {} to itself", m.endpoints_[x].name));
          continue;
        }
        const std::string name = pairs.size() == 1 ? prefix + c.name : fmt::format("{}{}[{}]", prefix, c.name, k);
        ++k;
        m.links_.push_back(Link{name, x, y, l->bandwidth_bytes_per_s, l->latency_s, l->efficiency, c.json_path});
      }
    }
  }

  // The link graph for routing. A hop's cost is the time to move a reference message of 1 MiB
  // over it (latency, the switch entered, serialisation at the link's bandwidth), so a fast link
  // beats a slightly shorter slow one. Hosts are ends, never transit: leaving a host costs a
  // penalty that only routes starting at it pay (once, whichever way they go). Routes are made on
  // first use (RouteTable); here only that every endpoint reaches every other is checked.
  void route_all() {
    const std::size_t n = m.endpoints_.size();
    auto switch_latency = [&](std::uint32_t e) {
      const Endpoint& ep = m.endpoints_[e];
      return ep.kind == EndpointKind::switch_ ? m.switches_[ep.index].spec.latency_s : 0.0;
    };
    constexpr double kReferenceBytes = 1 << 20;
    constexpr double kHostTransitPenalty_s = 1.0;
    std::vector<detail::RouteTable::Arc> arcs;
    std::vector<detail::RouteTable::LinkFacts> links;
    for (std::uint32_t i = 0; i < m.links_.size(); ++i) {
      const Link& l = m.links_[i];
      links.push_back({l.latency_s, l.bandwidth_bytes_per_s, l.a, l.b});
      for (const bool fwd : {true, false}) {
        const std::uint32_t from = fwd ? l.a : l.b;
        const std::uint32_t to = fwd ? l.b : l.a;
        const double leave = m.endpoints_[from].kind == EndpointKind::host ? kHostTransitPenalty_s : 0.0;
        const double c = l.latency_s + switch_latency(to) + kReferenceBytes / (l.bandwidth_bytes_per_s * l.efficiency) + leave;
        arcs.push_back({from, to, c, Hop{i, fwd}});
      }
    }
    std::vector<detail::RouteTable::EndpointFacts> facts;
    for (std::uint32_t e = 0; e < n; ++e) {
      const bool sw = m.endpoints_[e].kind == EndpointKind::switch_;
      facts.push_back({switch_latency(e), sw ? m.endpoints_[e].index : 0u, sw});
    }
    std::vector<std::uint32_t> hosts;
    for (const Host& h : m.hosts_) hosts.push_back(h.endpoint);
    auto table = std::make_shared<detail::RouteTable>(n, std::move(arcs), std::move(links), std::move(facts),
                                                      std::move(hosts));
    // Links run both ways, so reaching every endpoint from the first means every pair connects.
    const std::vector<bool> reached = table->reachable_from(0);
    for (std::uint32_t t = 0; t < n; ++t) {
      if (!reached[t]) {
        ctx.error("/components", fmt::format("{} \"{}\" is not connected to {} \"{}\": add a link",
                                             endpoint_kind_name(m.endpoints_[t].kind), m.endpoints_[t].name,
                                             endpoint_kind_name(m.endpoints_[0].kind), m.endpoints_[0].name));
      }
    }
    m.routes_ = std::move(table);
  }
};

std::string_view component_type_name(const ComponentSpec& c) {
  static constexpr std::string_view kNames[] = {"compute", "memory", "cache", "host", "link", "switch", "group", "collective"};
  return kNames[c.body.index()];
}

Machine Machine::load(const std::string& file, const std::vector<Override>& overrides) {
  detail::ParseContext ctx;
  Machine m;
  m.config_ = detail::load_and_parse(file, overrides, ctx);
  if (ctx.diagnostics.empty()) {
    MachineBuilder b{m, ctx, {}};
    if (const std::uint64_t n = MachineBuilder::count_endpoints(m.config_.root); n > MachineBuilder::kMaxEndpoints) {
      ctx.error("/components", fmt::format("the config makes {} devices, switches and hosts; at most {} are supported",
                                           n, MachineBuilder::kMaxEndpoints));
      throw InputError(std::move(ctx.diagnostics));
    }
    b.instantiate(m.config_.root, "", true);
    if (m.devices_.empty()) {
      ctx.error("/components", "the config has no device: a device is a group holding a compute and a memory component");
    }
    b.connect(m.config_.root, "");
    if (ctx.diagnostics.empty()) b.route_all();
  }
  if (!ctx.diagnostics.empty()) throw InputError(std::move(ctx.diagnostics));
  return m;
}

std::optional<std::uint32_t> Machine::find_endpoint(std::string_view name) const {
  auto it = endpoint_index_.find(std::string(name));
  if (it == endpoint_index_.end()) return std::nullopt;
  return it->second;
}

const Route& Machine::route(std::uint32_t from_endpoint, std::uint32_t to_endpoint) const {
  if (from_endpoint >= endpoints_.size() || to_endpoint >= endpoints_.size()) {
    throw std::out_of_range(fmt::format("route: endpoint {} or {} is not one of the machine's {}", from_endpoint,
                                        to_endpoint, endpoints_.size()));
  }
  return routes_->route(from_endpoint, to_endpoint);
}

std::optional<std::uint32_t> Machine::host_of_device(std::uint32_t device) const {
  return routes_->nearest_host(devices_.at(device).endpoint);
}

}  // namespace syntorch::hw
