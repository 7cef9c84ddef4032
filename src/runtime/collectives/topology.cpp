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

namespace {
std::vector<std::vector<std::uint32_t>> find_nodes(const CollectiveContext& cx) {
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
}  // namespace

const std::vector<std::vector<std::uint32_t>>& nodes_of(const CollectiveContext& cx) {
  if (!cx.nodes) cx.nodes = find_nodes(cx);
  return *cx.nodes;
}

NodeTree node_tree(std::uint32_t n, std::uint32_t which) {
  std::vector<std::vector<std::uint32_t>> kids(n);  // tree 0, by position
  if (n > 1) {
    std::uint32_t top = 1;
    while (top * 2 < n) top *= 2;
    kids[0].push_back(top);
    for (std::uint32_t r = 1; r < n; ++r) {
      const std::uint32_t b = r & (~r + 1);
      if (b < 2) continue;
      kids[r].push_back(r - b / 2);
      for (std::uint32_t off = b / 2; off >= 1; off /= 2) {
        if (r + off < n) {
          kids[r].push_back(r + off);
          break;
        }
      }
    }
  }
  auto node = [&](std::uint32_t pos) { return which == 0 ? pos : n % 2 == 0 ? n - 1 - pos : (pos + 1) % n; };
  NodeTree t;
  t.root = node(0);
  t.children.resize(n);
  t.parent.resize(n);
  for (std::uint32_t v = 0; v < n; ++v) t.parent[v] = v;
  for (std::uint32_t pos = 0; pos < n; ++pos) {
    for (std::uint32_t c : kids[pos]) {
      t.children[node(pos)].push_back(node(c));
      t.parent[node(c)] = node(pos);
    }
  }
  // Post-order by an explicit stack: a node is emitted once all its children are.
  std::vector<std::pair<std::uint32_t, std::size_t>> stack{{t.root, 0}};
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    if (next < t.children[v].size()) {
      const std::uint32_t c = t.children[v][next++];
      stack.emplace_back(c, 0);
    } else {
      t.post_order.push_back(v);
      t.depth = std::max(t.depth, static_cast<std::uint32_t>(stack.size() - 1));
      stack.pop_back();
    }
  }
  return t;
}

double busiest_link_s(const CollectiveContext& cx, std::span<const Transfer> transfers) {
  std::vector<double> load(2 * cx.machine.links().size(), 0.0);
  for (const Transfer& t : transfers) {
    for (const hw::Hop& h : cx.machine.route(t.src_endpoint, t.dst_endpoint).hops) {
      load[2 * h.link + (h.forward ? 1 : 0)] += t.bytes;
    }
  }
  double busiest_s = 0;
  for (std::size_t i = 0; i < load.size(); ++i) {
    if (load[i] <= 0) continue;
    const hw::Link& l = cx.machine.links()[i / 2];
    busiest_s = std::max(busiest_s, load[i] / (l.bandwidth_bytes_per_s * l.efficiency));
  }
  return busiest_s;
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
