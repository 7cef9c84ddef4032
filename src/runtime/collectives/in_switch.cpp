// In-switch all-reduce (NVLink SHARP, NCCL's NVLS), and the switch part of nvlstree. The ranks
// reduce-scatter through a switch that can reduce: each rank loads its 1/n share reduced by the
// switch from every rank's copy (every rank's data goes up once, the reduced share comes down),
// then stores its reduced share once into the switch, which multicasts it to every rank. Each
// rank's link carries (n+1)/n of the message each way, where a ring sends 2(n-1)/n of it twice
// over. Multicast loads and stores reach `in_switch_efficiency` of the link (NCCL's tuner: 0.85
// on Hopper, 0.74 on Blackwell) and the algorithm pays `in_switch_latency` once (its barriers
// through the switch). Offered only where one switch on every rank's route can reduce.

#include <algorithm>
#include <limits>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

std::optional<SwitchLayout> single_switch(const CollectiveContext& cx) {
  std::vector<std::uint32_t> all(cx.endpoints.size());
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::optional<std::uint32_t> sw = reducing_switch(cx, all);
  if (!sw) return std::nullopt;
  return SwitchLayout{{std::move(all)}, {cx.machine.switches()[*sw].endpoint}};
}

// Shares of a rail's data a node's network link carries each way: half a share per tree edge at
// the node, in both trees.
double busiest_node_shares(std::uint32_t n) {
  std::vector<double> shares(n, 0.0);
  for (std::uint32_t which = 0; which < 2; ++which) {
    const NodeTree t = node_tree(n, which);
    for (std::uint32_t v = 0; v < n; ++v) shares[v] += 0.5 * static_cast<double>(t.edges(v));
  }
  return n > 1 ? *std::max_element(shares.begin(), shares.end()) : 0.0;
}

}  // namespace

std::optional<SwitchLayout> switch_layout(const CollectiveContext& cx) {
  SwitchLayout l;
  l.nodes = nodes_of(cx);
  if (l.nodes.size() < 2 || l.nodes.front().size() < 2) return std::nullopt;
  for (const auto& node : l.nodes) {
    const std::optional<std::uint32_t> sw = reducing_switch(cx, node);
    if (!sw) return std::nullopt;
    l.switch_endpoint.push_back(cx.machine.switches()[*sw].endpoint);
  }
  return l;
}

CollectivePlan switch_allreduce(const OpDesc& op, const CollectiveContext& cx, const SwitchLayout& layout,
                                std::string name) {
  const auto nodes = static_cast<std::uint32_t>(layout.nodes.size());
  const auto local = static_cast<std::uint32_t>(layout.nodes.front().size());
  const double bytes = static_cast<double>(op.bytes);
  const auto k = static_cast<std::uint32_t>(chunks_for(bytes, cx.protocol, kMaxSwitchChunks));
  const double chunk = bytes / k, share = chunk / local;
  const double wire = 1 / cx.library.in_switch_efficiency;  // switch traffic on the wire per payload byte
  CollectivePlan plan;
  plan.algorithm = std::move(name);
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.launch_latency_s = cx.library.in_switch_latency_s;
  // Between nodes every rail's share goes up and down two trees: 2(N-1)/N of a share per rank.
  plan.bytes_per_rank = bytes + bytes / local + 2.0 * (nodes - 1) * bytes / local / nodes;
  // `follows`: the previous chunk of the same stage and rank (chunks leave in order).
  auto add = [&](std::uint32_t src, std::uint32_t dst, double b, std::vector<std::uint32_t> deps, double cap,
                 std::uint32_t follows) {
    Transfer t;
    t.src_endpoint = src;
    t.dst_endpoint = dst;
    t.bytes = b;
    t.rate_cap_bytes_per_s = cap;
    t.deps = std::move(deps);
    t.follows = follows;
    plan.transfers.push_back(std::move(t));
    return static_cast<std::uint32_t>(plan.transfers.size() - 1);
  };
  const double whole_cap = channel_cap(bytes, cx.protocol);
  const double share_cap = channel_cap(bytes / local, cx.protocol);
  // Indices by [node][local][chunk] (and ring step), filled in dependency order.
  auto grid = [&] {
    return std::vector<std::vector<std::vector<std::uint32_t>>>(
        nodes, std::vector<std::vector<std::uint32_t>>(local, std::vector<std::uint32_t>(k)));
  };
  auto up = grid(), scattered = grid(), gathered_up = grid(), multicast = grid();
  // Between nodes, NCCL's double binary tree: each tree carries half of every rail's share, reduced
  // up to its root and broadcast down. Indices by [tree][node][local][chunk]: the transfer into the
  // node's parent (up) and into the node from its parent (down).
  const double half = share / 2;
  const NodeTree trees[2] = {node_tree(nodes, 0), node_tree(nodes, 1)};
  auto tree_grid = [&] {
    return std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>>(
        2, std::vector<std::vector<std::vector<std::uint32_t>>>(
               nodes, std::vector<std::vector<std::uint32_t>>(local, std::vector<std::uint32_t>(k, kNoTransfer))));
  };
  auto tree_up = tree_grid(), tree_down = tree_grid();
  for (std::uint32_t j = 0; j < k; ++j) {
    for (std::uint32_t ni = 0; ni < nodes; ++ni) {
      const std::vector<std::uint32_t>& ranks = layout.nodes[ni];
      const std::uint32_t sw = layout.switch_endpoint[ni];
      for (std::uint32_t l = 0; l < local; ++l) {
        up[ni][l][j] = add(cx.endpoints[ranks[l]], sw, chunk * wire, {}, whole_cap, j > 0 ? up[ni][l][j - 1] : kNoTransfer);
      }
      for (std::uint32_t l = 0; l < local; ++l) {
        std::vector<std::uint32_t> deps;
        for (std::uint32_t r = 0; r < local; ++r) deps.push_back(up[ni][r][j]);  // the sum needs every rank's chunk
        scattered[ni][l][j] = add(sw, cx.endpoints[ranks[l]], share * wire, deps, share_cap,
                                  j > 0 ? scattered[ni][l][j - 1] : kNoTransfer);
      }
    }
    for (std::uint32_t tree = 0; tree < 2 && nodes > 1; ++tree) {
      const NodeTree& t = trees[tree];
      // Up, children first: a node sends its half once its own share is reduced in its node and its
      // children's halves have arrived. A point-to-point transfer pays its synchronisation on every
      // chunk, the previous chunk included.
      for (std::uint32_t v : t.post_order) {
        if (!t.has_parent(v)) continue;
        for (std::uint32_t l = 0; l < local; ++l) {
          std::vector<std::uint32_t> deps{scattered[v][l][j]};
          for (std::uint32_t c : t.children[v]) deps.push_back(tree_up[tree][c][l][j]);
          if (j > 0) deps.push_back(tree_up[tree][v][l][j - 1]);
          tree_up[tree][v][l][j] = add(cx.endpoints[layout.nodes[v][l]], cx.endpoints[layout.nodes[t.parent[v]][l]],
                                       half, std::move(deps), share_cap, kNoTransfer);
        }
      }
      // Down, parents first: the root has the sum once its children's halves are in.
      for (auto it = t.post_order.rbegin(); it != t.post_order.rend(); ++it) {
        const std::uint32_t v = *it;
        if (!t.has_parent(v)) continue;
        const std::uint32_t parent = t.parent[v];
        for (std::uint32_t l = 0; l < local; ++l) {
          std::vector<std::uint32_t> deps;
          if (!t.has_parent(parent)) {
            deps.push_back(scattered[parent][l][j]);
            for (std::uint32_t c : t.children[parent]) deps.push_back(tree_up[tree][c][l][j]);
          } else {
            deps.push_back(tree_down[tree][parent][l][j]);
          }
          if (j > 0) deps.push_back(tree_down[tree][v][l][j - 1]);
          tree_down[tree][v][l][j] = add(cx.endpoints[layout.nodes[parent][l]], cx.endpoints[layout.nodes[v][l]],
                                         half, std::move(deps), share_cap, kNoTransfer);
        }
      }
    }
    for (std::uint32_t ni = 0; ni < nodes; ++ni) {
      const std::vector<std::uint32_t>& ranks = layout.nodes[ni];
      const std::uint32_t sw = layout.switch_endpoint[ni];
      for (std::uint32_t l = 0; l < local; ++l) {
        // The share is whole once it is reduced here and both trees' halves of the total are here.
        std::vector<std::uint32_t> deps{scattered[ni][l][j]};
        for (std::uint32_t tree = 0; tree < 2 && nodes > 1; ++tree) {
          if (trees[tree].has_parent(ni)) {
            deps.push_back(tree_down[tree][ni][l][j]);
          } else {
            for (std::uint32_t c : trees[tree].children[ni]) deps.push_back(tree_up[tree][c][l][j]);
          }
        }
        gathered_up[ni][l][j] = add(cx.endpoints[ranks[l]], sw, share * wire, deps, share_cap,
                                    j > 0 ? gathered_up[ni][l][j - 1] : kNoTransfer);
      }
      for (std::uint32_t l = 0; l < local; ++l) {
        std::vector<std::uint32_t> deps;
        for (std::uint32_t r = 0; r < local; ++r) deps.push_back(gathered_up[ni][r][j]);  // multicast of every share
        multicast[ni][l][j] = add(sw, cx.endpoints[ranks[l]], chunk * wire, deps, whole_cap,
                                  j > 0 ? multicast[ni][l][j - 1] : kNoTransfer);
      }
    }
  }
  return plan;
}

double estimate_switch_allreduce_s(const OpDesc& op, const CollectiveContext& cx, const SwitchLayout& layout) {
  const double nodes = static_cast<double>(layout.nodes.size());
  const double local = static_cast<double>(layout.nodes.front().size());
  const double s = static_cast<double>(op.bytes);
  const std::uint32_t a = layout.nodes[0][0], b = layout.nodes[0][1];
  const double intra_bw =
      std::min(route_bytes_per_s(cx, a, b), channel_cap(s, cx.protocol)) * cx.library.in_switch_efficiency;
  const double alpha_intra = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[b]).latency_s;
  const double intra_s = (1 + 1 / local) * s / intra_bw;
  double latency_s = cx.library.in_switch_latency_s + 4 * alpha_intra, inter_s = 0;
  if (nodes > 1) {
    const std::uint32_t c = layout.nodes[1][0];
    const double inter_bw = std::min(route_bytes_per_s(cx, a, c), channel_cap(s / local, cx.protocol));
    const double alpha_inter = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[c]).latency_s;
    // Up and down the trees' depth, and the busiest node's network link: half a share per tree
    // edge at it. Between two nodes one share each way; from four on two, where an inner node with
    // two children in one tree is a leaf of the other (NCCL's tuner halves the network bandwidth of
    // NVLS_TREE beyond two nodes).
    latency_s += 2 * node_tree(static_cast<std::uint32_t>(nodes), 0).depth * alpha_inter;
    inter_s = busiest_node_shares(static_cast<std::uint32_t>(nodes)) * (s / local) / inter_bw;
  }
  // The chunks pipeline through the node's switch and the network: the slower part sets the pace,
  // the faster one adds its share of the first and last chunk.
  const double k = static_cast<double>(chunks_for(s, cx.protocol, kMaxSwitchChunks));
  return latency_s + std::max(intra_s, inter_s) + std::min(intra_s, inter_s) / k;
}

std::optional<CollectivePlan> in_switch_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<SwitchLayout> layout = single_switch(cx);
  if (!layout) return std::nullopt;
  CollectivePlan plan = switch_allreduce(op, cx, *layout, "in_switch");
  const auto k = chunks_for(static_cast<double>(op.bytes), cx.protocol, kMaxSwitchChunks);
  plan.why.push_back(fmt::format("in_switch: {} ranks reduce-scatter through the switch (each loads its reduced 1/{} "
                                 "share), then store it for the switch to multicast; {} chunk(s) of {}",
                                 cx.endpoints.size(), cx.endpoints.size(), k,
                                 units::format_size(static_cast<double>(op.bytes) / static_cast<double>(k))));
  return plan;
}

double estimate_in_switch_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<SwitchLayout> layout = single_switch(cx);
  return layout ? estimate_switch_allreduce_s(op, cx, *layout) : std::numeric_limits<double>::infinity();
}

}  // namespace syntorch::runtime::detail
