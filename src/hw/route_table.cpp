#include "route_table.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>

#include <algorithm>
#include <limits>
#include <map>

namespace syntorch::hw::detail {

struct RouteTable::Graph {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_weight_t, double>>;
  explicit Graph(std::size_t n) : g(n) {}
  G g;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Hop> hop_of;  // the arc chosen between two endpoints
};

RouteTable::RouteTable(std::size_t endpoints, std::vector<Arc> arcs, std::vector<LinkFacts> links,
                       std::vector<EndpointFacts> facts, std::vector<std::uint32_t> hosts)
    : n_(endpoints),
      graph_(std::make_unique<Graph>(endpoints)),
      links_(std::move(links)),
      facts_(std::move(facts)),
      hosts_(std::move(hosts)),
      rows_(std::make_unique<Row[]>(endpoints)) {
  // Among parallel links between two endpoints the cheapest carries the route.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<double, Hop>> best;
  for (const Arc& a : arcs) {
    auto it = best.find({a.from, a.to});
    if (it == best.end() || a.cost < it->second.first) best[{a.from, a.to}] = {a.cost, a.hop};
  }
  for (const auto& [ends, choice] : best) {
    boost::add_edge(ends.first, ends.second, choice.first, graph_->g);
    graph_->hop_of[ends] = choice.second;
  }
}

RouteTable::~RouteTable() = default;

RouteTable::Row& RouteTable::row(std::uint32_t s) const {
  Row& row = rows_[s];
  std::call_once(row.once, [&] {
    std::vector<std::size_t> pred(n_);
    std::vector<double> dist(n_);
    boost::dijkstra_shortest_paths(graph_->g, s, boost::predecessor_map(pred.data()).distance_map(dist.data()));
    row.predecessor.assign(pred.begin(), pred.end());
  });
  return row;
}

Route RouteTable::spell(const Row& row, std::uint32_t s, std::uint32_t t) const {
  Route r;
  if (t == s || row.predecessor[t] == t) return r;  // itself, or unreachable (refused when the machine loads)
  for (std::uint32_t v = t; v != s; v = row.predecessor[v]) {
    r.hops.push_back(graph_->hop_of.at({row.predecessor[v], v}));
  }
  std::reverse(r.hops.begin(), r.hops.end());
  r.bottleneck_bytes_per_s = std::numeric_limits<double>::infinity();
  for (std::size_t h = 0; h < r.hops.size(); ++h) {
    const LinkFacts& l = links_[r.hops[h].link];
    r.latency_s += l.latency_s;
    r.bottleneck_bytes_per_s = std::min(r.bottleneck_bytes_per_s, l.bandwidth_bytes_per_s);
    const std::uint32_t to = r.hops[h].forward ? l.b : l.a;
    if (h + 1 < r.hops.size() && facts_[to].is_switch) {
      r.switches.push_back(facts_[to].switch_index);
      r.latency_s += facts_[to].switch_latency_s;
    }
  }
  return r;
}

const Route& RouteTable::route(std::uint32_t from, std::uint32_t to) const {
  Row& r = row(from);  // Machine::route checked both endpoints
  std::lock_guard lock(r.mutex);
  std::unique_ptr<Route>& slot = r.routes[to];
  if (!slot) slot = std::make_unique<Route>(spell(r, from, to));
  return *slot;
}

std::optional<std::uint32_t> RouteTable::nearest_host(std::uint32_t from) const {
  Row& r = row(from);
  std::call_once(r.host_once, [&] {
    double best = std::numeric_limits<double>::infinity();
    for (std::uint32_t h = 0; h < hosts_.size(); ++h) {
      if (hosts_[h] == from || r.predecessor[hosts_[h]] == hosts_[h]) continue;
      const Route to_host = spell(r, from, hosts_[h]);  // compared, not kept: the row stores only routes used
      const double score = to_host.latency_s + 1e-12 * static_cast<double>(to_host.hops.size());
      if (score < best) {
        best = score;
        r.nearest_host = h;
      }
    }
  });
  return r.nearest_host;
}

std::vector<bool> RouteTable::reachable_from(std::uint32_t from) const {
  const Row& r = row(from);
  std::vector<bool> out(n_, false);
  for (std::size_t t = 0; t < n_; ++t) out[t] = r.predecessor[t] != t || t == from;
  return out;
}

}  // namespace syntorch::hw::detail
