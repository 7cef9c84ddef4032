// What collective algorithms ask of the topology: the bandwidth of a route, the nodes the ranks
// form (the ranks its fastest tier of routes joins), and a switch that reduces on the routes
// between some ranks.

#include <algorithm>

#include "collectives.hpp"

namespace syntorch::runtime::detail {

double route_bytes_per_s(const CollectiveContext& cx, std::uint32_t from, std::uint32_t to) {
  double bw = sim::kUnlimitedRate;
  for (const hw::Hop& h : cx.machine.route(cx.endpoints[from], cx.endpoints[to]).hops) {
    const hw::Link& l = cx.machine.links()[h.link];
    bw = std::min(bw, l.bandwidth_bytes_per_s * l.efficiency);
  }
  return bw;
}

std::vector<std::vector<std::uint32_t>> nodes_of(const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  double fastest_bytes_per_s = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (i != j) fastest_bytes_per_s = std::max(fastest_bytes_per_s, route_bytes_per_s(cx, i, j));
    }
  }
  auto near = [&](std::uint32_t i, std::uint32_t j) { return route_bytes_per_s(cx, i, j) >= 0.999 * fastest_bytes_per_s; };
  std::vector<std::vector<std::uint32_t>> nodes;
  std::vector<bool> placed(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (placed[i]) continue;
    std::vector<std::uint32_t> node{i};
    placed[i] = true;
    for (std::uint32_t j = i + 1; j < n; ++j) {
      if (!placed[j] && near(i, j)) {
        node.push_back(j);
        placed[j] = true;
      }
    }
    nodes.push_back(std::move(node));
  }
  for (const auto& node : nodes) {
    if (node.size() != nodes.front().size()) return {};
    for (std::uint32_t a : node) {
      for (std::uint32_t b : node) {
        if (a != b && !near(a, b)) return {};
      }
    }
  }
  return nodes;
}

std::optional<std::uint32_t> reducing_switch(const CollectiveContext& cx, std::span<const std::uint32_t> ranks) {
  const hw::Machine& m = cx.machine;
  for (const hw::Switch& s : m.switches()) {
    if (!s.spec.in_switch_reduction) continue;
    const auto index = static_cast<std::uint32_t>(&s - m.switches().data());
    bool on_all = true;
    for (std::size_t i = 1; i < ranks.size() && on_all; ++i) {
      const auto& crossed = m.route(cx.endpoints[ranks[0]], cx.endpoints[ranks[i]]).switches;
      on_all = std::find(crossed.begin(), crossed.end(), index) != crossed.end();
    }
    if (on_all) return index;
  }
  return std::nullopt;
}

}  // namespace syntorch::runtime::detail
