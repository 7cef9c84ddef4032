// Tree all-reduce. Within one node: a binary tree over the ranks (rank 0 the root, rank i's parent
// (i-1)/2). Each chunk is reduced up the tree (a rank forwards it once both children's copies
// arrived) and broadcast back down, pipelined chunk by chunk. Latency grows with log2(n) rather
// than n; each rank sends the whole message up and a parent sends it down once per child.
// Across several equal nodes, NCCL's tree: in each node a chain of its ranks ends at a head, and
// the heads of the nodes form NCCL's double binary tree (node_tree). The message is split between
// the two trees and, within each, between several heads (its channels), so that every head's
// network link carries a part: each chunk is reduced up the chain to the head, up the tree of
// heads to the root, broadcast down the tree and down the chains. 2(L-1) + 2 x depth hops of
// latency where a ring pays 2(nL-1).

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

// Heads per node in each tree: every rank of a node, as far as the library's channels go, so that
// each rank's network link carries a part of each tree.
std::uint32_t heads_per_node(const CollectiveContext& cx, std::uint32_t local) {
  return std::max(1u, std::min(local, cx.protocol.channels));
}

CollectivePlan node_tree_allreduce(const OpDesc& op, const CollectiveContext& cx,
                                   const std::vector<std::vector<std::uint32_t>>& nodes, std::uint64_t max_chunks) {
  const auto n_nodes = static_cast<std::uint32_t>(nodes.size());
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  const std::uint32_t heads = heads_per_node(cx, local);
  const std::uint32_t parts = 2 * heads;
  const double bytes = static_cast<double>(op.bytes), part = bytes / parts;
  // Each part goes its own way, in chunks of the library's chunk size as the whole message would.
  const auto k = static_cast<std::uint32_t>(chunks_for(bytes, cx.protocol, max_chunks));
  const double chunk = part / k;
  const double cap = channel_cap(part, cx.protocol, parts);
  const NodeTree trees[2] = {node_tree(n_nodes, 0), node_tree(n_nodes, 1)};
  CollectivePlan plan;
  plan.algorithm = "tree";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = bytes;
  auto add = [&](std::uint32_t from, std::uint32_t to, std::vector<std::uint32_t> deps) {
    Transfer t;
    t.src_endpoint = cx.endpoints[from];
    t.dst_endpoint = cx.endpoints[to];
    t.bytes = chunk;
    t.rate_cap_bytes_per_s = cap;
    t.deps = std::move(deps);
    plan.transfers.push_back(std::move(t));
    return static_cast<std::uint32_t>(plan.transfers.size() - 1);
  };
  // Indices by [node][chain position] of the current chunk and the previous one: chain_up[v][p]
  // carries position p's partial to p-1; chain_down[v][p] carries the total from p to p+1.
  using Grid = std::vector<std::vector<std::uint32_t>>;
  const Grid none(n_nodes, std::vector<std::uint32_t>(local, kNoTransfer));
  for (std::uint32_t q = 0; q < parts; ++q) {
    const NodeTree& t = trees[q % 2];
    const std::uint32_t head = q / 2;
    auto rank = [&](std::uint32_t v, std::uint32_t pos) { return nodes[v][(head + pos) % local]; };
    Grid chain_up = none, chain_down = none, prev_chain_up = none, prev_chain_down = none;
    std::vector<std::uint32_t> tree_up(n_nodes, kNoTransfer), tree_down(n_nodes, kNoTransfer);
    std::vector<std::uint32_t> prev_tree_up = tree_up, prev_tree_down = tree_down;
    auto then = [](std::vector<std::uint32_t> deps, std::uint32_t previous) {
      if (previous != kNoTransfer) deps.push_back(previous);  // the channel's previous chunk first
      return deps;
    };
    for (std::uint32_t j = 0; j < k; ++j) {
      // What a node's head holds once its own chain has reduced into it.
      std::vector<std::vector<std::uint32_t>> at_head(n_nodes);
      for (std::uint32_t v = 0; v < n_nodes; ++v) {
        for (std::uint32_t p = local - 1; p >= 1; --p) {
          std::vector<std::uint32_t> deps;
          if (p + 1 < local) deps.push_back(chain_up[v][p + 1]);
          chain_up[v][p] = add(rank(v, p), rank(v, p - 1), then(std::move(deps), prev_chain_up[v][p]));
        }
        if (local > 1) at_head[v].push_back(chain_up[v][1]);
      }
      for (std::uint32_t v : t.post_order) {
        if (!t.has_parent(v)) continue;
        std::vector<std::uint32_t> deps = at_head[v];
        for (std::uint32_t c : t.children[v]) deps.push_back(tree_up[c]);
        tree_up[v] = add(rank(v, 0), rank(t.parent[v], 0), then(std::move(deps), prev_tree_up[v]));
      }
      // The root holds the total once its chain and its children are in; the others once it came down.
      std::vector<std::vector<std::uint32_t>> total(n_nodes);
      total[t.root] = at_head[t.root];
      for (std::uint32_t c : t.children[t.root]) total[t.root].push_back(tree_up[c]);
      for (auto it = t.post_order.rbegin(); it != t.post_order.rend(); ++it) {
        const std::uint32_t v = *it;
        if (!t.has_parent(v)) continue;
        tree_down[v] = add(rank(t.parent[v], 0), rank(v, 0), then(total[t.parent[v]], prev_tree_down[v]));
        total[v] = {tree_down[v]};
      }
      for (std::uint32_t v = 0; v < n_nodes; ++v) {
        for (std::uint32_t p = 0; p + 1 < local; ++p) {
          std::vector<std::uint32_t> deps = p == 0 ? total[v] : std::vector<std::uint32_t>{chain_down[v][p - 1]};
          chain_down[v][p] = add(rank(v, p), rank(v, p + 1), then(std::move(deps), prev_chain_down[v][p]));
        }
      }
      prev_chain_up = chain_up;
      prev_chain_down = chain_down;
      prev_tree_up = tree_up;
      prev_tree_down = tree_down;
    }
  }
  plan.why.push_back(fmt::format("tree: {} nodes of {} ranks; in each node a chain to a head, the heads in NCCL's "
                                 "double binary tree, the message in {} parts ({} heads a node in each tree), {} "
                                 "pipelined chunk(s) of {}",
                                 n_nodes, local, parts, heads, k, units::format_size(chunk)));
  return plan;
}

}  // namespace

std::optional<CollectivePlan> tree_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const std::vector<std::vector<std::uint32_t>>& nodes = nodes_of(cx);
  if (nodes.size() > 1) return node_tree_allreduce(op, cx, nodes, kMaxChunks);
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const auto k = static_cast<std::uint32_t>(chunks_for(static_cast<double>(op.bytes), cx.protocol));
  const double chunk = static_cast<double>(op.bytes) / k;
  const double cap = channel_cap(static_cast<double>(op.bytes), cx.protocol);
  CollectivePlan plan;
  plan.algorithm = "tree";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = static_cast<double>(op.bytes);
  // up(i, j): rank i (i > 0) sends chunk j to its parent; down(i, j): the parent sends it to i.
  auto up = [&](std::uint32_t i, std::uint32_t j) { return (i - 1) * k + j; };
  auto down = [&](std::uint32_t i, std::uint32_t j) { return (n - 1) * k + (i - 1) * k + j; };
  plan.transfers.resize(2 * static_cast<std::size_t>(n - 1) * k);
  for (std::uint32_t i = 1; i < n; ++i) {
    const std::uint32_t parent = (i - 1) / 2;
    for (std::uint32_t j = 0; j < k; ++j) {
      Transfer& u = plan.transfers[up(i, j)];
      u.src_endpoint = cx.endpoints[i];
      u.dst_endpoint = cx.endpoints[parent];
      u.bytes = chunk;
      u.rate_cap_bytes_per_s = cap;
      for (std::uint32_t c : {2 * i + 1, 2 * i + 2}) {
        if (c < n) u.deps.push_back(up(c, j));  // children's partial sums first
      }
      if (j > 0) u.deps.push_back(up(i, j - 1));
      Transfer& d = plan.transfers[down(i, j)];
      d.src_endpoint = cx.endpoints[parent];
      d.dst_endpoint = cx.endpoints[i];
      d.bytes = chunk;
      d.rate_cap_bytes_per_s = cap;
      if (parent == 0) {
        for (std::uint32_t c : {1u, 2u}) {
          if (c < n) d.deps.push_back(up(c, j));  // the root has the full sum of chunk j
        }
      } else {
        d.deps.push_back(down(parent, j));
      }
      if (j > 0) d.deps.push_back(down(i, j - 1));
    }
  }
  plan.why.push_back(fmt::format("tree: binary tree of {} ranks, depth {}, {} pipelined chunk(s) of {}", n,
                                 static_cast<int>(std::ceil(std::log2(n))), k, units::format_size(chunk)));
  return plan;
}

std::optional<CollectivePlan> direct_sendrecv(const OpDesc& op, const CollectiveContext& cx) {
  const auto k = static_cast<std::uint32_t>(chunks_for(static_cast<double>(op.bytes), cx.protocol));
  CollectivePlan plan;
  plan.algorithm = "direct";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = static_cast<double>(op.bytes);
  for (std::uint32_t j = 0; j < k; ++j) {
    Transfer t;
    t.src_endpoint = cx.endpoints[0];
    t.dst_endpoint = cx.endpoints[1];
    t.bytes = static_cast<double>(op.bytes) / k;
    t.rate_cap_bytes_per_s = channel_cap(static_cast<double>(op.bytes), cx.protocol);
    if (j > 0) t.deps.push_back(j - 1);
    plan.transfers.push_back(std::move(t));
  }
  plan.why.push_back(fmt::format("direct: rank 0 sends {} to rank 1 in {} chunk(s)",
                                 units::format_size(static_cast<double>(op.bytes)), k));
  return plan;
}

// An inner node's link carries its two children's data in and its own out and down. Across
// nodes: the hops of a chain and of the tree's depth, up and down, and the busiest link carrying
// its parts of the message.
double estimate_tree_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const double n = static_cast<double>(cx.endpoints.size());
  const double s = static_cast<double>(op.bytes);
  const std::vector<std::vector<std::uint32_t>>& nodes = nodes_of(cx);
  if (nodes.size() > 1) {
    const CollectivePlan one_chunk = node_tree_allreduce(op, cx, nodes, 1);
    const std::uint32_t a = nodes[0][0], b = nodes[0].size() > 1 ? nodes[0][1] : nodes[0][0], c = nodes[1][0];
    const double alpha_intra = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[b]).latency_s;
    const double alpha_inter = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[c]).latency_s;
    // The two trees are as deep (one mirrors or shifts the other).
    const double depth = node_tree(static_cast<std::uint32_t>(nodes.size()), 0).depth;
    const double chain = static_cast<double>(nodes.front().size() - 1);
    // The first chunk crosses every hop, up and down, before the pipeline is full.
    const double parts = 2.0 * heads_per_node(cx, static_cast<std::uint32_t>(nodes.front().size()));
    const double k = static_cast<double>(chunks_for(s, cx.protocol));
    const double chunk = s / parts / k;
    const double cap = channel_cap(s / parts, cx.protocol, static_cast<std::uint32_t>(parts));
    const double intra_hop_s = alpha_intra + chunk / payload_rate(cx, std::min(route_bytes_per_s(cx, a, b), cap));
    const double inter_hop_s = alpha_inter + chunk / payload_rate(cx, std::min(route_bytes_per_s(cx, a, c), cap));
    // Each part's chunks then follow one a hop apart (a channel's chunk waits for its previous
    // one), unless the busiest link takes longer to carry every part.
    const double stream_s = (k - 1) * std::max(intra_hop_s, inter_hop_s);
    return 2 * (chain * intra_hop_s + depth * inter_hop_s) +
           std::max(stream_s, busiest_link_s(cx, one_chunk.transfers) / cx.protocol.payload);
  }
  const double alpha = cx.protocol.step_latency_s + ring_hop_latency(cx);
  const double bw = payload_rate(cx, std::min(ring_bandwidth(cx), channel_cap(s, cx.protocol)));
  return 2 * std::ceil(std::log2(n)) * alpha + 3 * s / bw;
}

}  // namespace syntorch::runtime::detail
