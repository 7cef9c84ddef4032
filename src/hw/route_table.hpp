#pragma once
// Routes between a machine's endpoints, computed one source at a time on first use (a Dijkstra
// over the link graph, kept as its shortest-path tree: one predecessor per endpoint) and each
// route spelled out the first time it is asked for: a machine of thousands of GPUs loads without
// routing every pair, and a simulation pays only for the sources and routes it uses (a 4,480-GPU
// machine's tree is 40 kB a source). Safe to query from several threads.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "syntorch/hw/machine.hpp"

namespace syntorch::hw::detail {

class RouteTable {
 public:
  // One direction of a link the route may cross, at `cost` (lower is better).
  struct Arc {
    std::uint32_t from, to;
    double cost;
    Hop hop;
  };
  // What a route's latency and bottleneck are made of.
  struct LinkFacts {
    double latency_s, bandwidth_bytes_per_s;
    std::uint32_t a, b;
  };
  struct EndpointFacts {
    double switch_latency_s;  // 0 unless a switch
    std::uint32_t switch_index;
    bool is_switch;
  };

  // `hosts`: the host endpoints, in host order (nearest_host answers with an index into them).
  RouteTable(std::size_t endpoints, std::vector<Arc> arcs, std::vector<LinkFacts> links,
             std::vector<EndpointFacts> facts, std::vector<std::uint32_t> hosts);
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  const Route& route(std::uint32_t from, std::uint32_t to) const;
  // The host closest to `from` by route latency (then hops), worked out with its routes.
  std::optional<std::uint32_t> nearest_host(std::uint32_t from) const;
  // The endpoints `from` reaches (all of them on a connected machine).
  std::vector<bool> reachable_from(std::uint32_t from) const;

 private:
  struct Graph;
  // One source's shortest-path tree and the routes spelled out from it so far.
  struct Row {
    std::once_flag once;
    std::vector<std::uint32_t> predecessor;  // on the way from the source; itself where unreachable
    std::once_flag host_once;                // nearest_host, worked out when first asked for
    std::optional<std::uint32_t> nearest_host;
    std::mutex mutex;
    std::unordered_map<std::uint32_t, std::unique_ptr<Route>> routes;
  };
  Row& row(std::uint32_t from) const;
  Route spell(const Row& row, std::uint32_t from, std::uint32_t to) const;

  std::size_t n_;
  std::unique_ptr<Graph> graph_;
  std::vector<LinkFacts> links_;
  std::vector<EndpointFacts> facts_;
  std::vector<std::uint32_t> hosts_;
  mutable std::unique_ptr<Row[]> rows_;
};

}  // namespace syntorch::hw::detail
