// Broadcast and reduce as NCCL runs them: a pipelined chain along the ring. The message is cut
// into chunks; chunk j leaves rank i for rank i+1 once it has arrived at rank i (for reduce, once
// rank i has added its own share) and once rank i sent chunk j-1, so after the chain fills, every
// link carries the whole message once. The chain starts at the group's first rank: on the
// machines' symmetric topologies which rank is the root does not change the time. Across several
// nodes the message is shared by several chains (NCCL's channels), each leaving the nodes through a
// different rank's network link.

#include <algorithm>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {
// A chain fills in n - 1 hops of one chunk: cut finer than a ring's segments, so that filling it
// costs what the library's own chunk size makes it cost, not a simulation limit.
constexpr std::uint64_t kMaxChainChunks = 256;

// The chains' orders, each from the group's first rank through every rank. One in rank order;
// across several nodes of L ranks, L-1 chains (as channels allow), chain c leaving the first node
// at its local rank c+1 after the others, and each later node at the rank before the one it came
// in at, so that every crossing joins ranks of one local index (one rail) and the chains cross on
// different ones (all but the root's).
RingOrders chain_orders(const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const std::vector<std::vector<std::uint32_t>>& nodes = nodes_of(cx);
  if (nodes.size() < 2 || nodes.front().size() < 2) {
    RingOrders single(1, std::vector<std::uint32_t>(n));
    for (std::uint32_t i = 0; i < n; ++i) single[0][i] = i;
    return single;
  }
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  const std::uint32_t chains = std::min(local - 1, std::max(1u, cx.protocol.channels));
  RingOrders orders(chains);
  for (std::uint32_t c = 0; c < chains; ++c) {
    const std::uint32_t exit = c + 1;
    std::vector<std::uint32_t>& order = orders[c];
    order.push_back(nodes[0][0]);
    for (std::uint32_t l = 1; l < local; ++l) {
      if (l != exit) order.push_back(nodes[0][l]);
    }
    order.push_back(nodes[0][exit]);
    std::uint32_t enter = exit;
    for (std::size_t ni = 1; ni < nodes.size(); ++ni) {
      for (std::uint32_t step = 0; step < local; ++step) order.push_back(nodes[ni][(enter + step) % local]);
      enter = (enter + local - 1) % local;
    }
  }
  return orders;
}

CollectivePlan chain(const CollectiveContext& cx, double bytes, bool towards_first,
                     std::uint64_t max_chunks = kMaxChainChunks) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const RingOrders orders = chain_orders(cx);
  const auto chains = static_cast<std::uint32_t>(orders.size());
  const auto k = static_cast<std::uint32_t>(chunks_for(bytes, cx.protocol, max_chunks));
  CollectivePlan plan;
  plan.algorithm = "ring";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = bytes;
  const std::uint32_t hops = n - 1;
  plan.transfers.resize(static_cast<std::size_t>(chains) * hops * k);
  auto id = [&](std::uint32_t c, std::uint32_t h, std::uint32_t j) { return (c * hops + h) * k + j; };
  const double cap = channel_cap(bytes / chains, cx.protocol, chains);
  for (std::uint32_t c = 0; c < chains; ++c) {
    for (std::uint32_t h = 0; h < hops; ++h) {
      // Broadcast: hop h goes from position h to h+1. Reduce: towards the first, from n-1-h to n-2-h.
      const std::uint32_t from = orders[c][towards_first ? n - 1 - h : h];
      const std::uint32_t to = orders[c][towards_first ? n - 2 - h : h + 1];
      for (std::uint32_t j = 0; j < k; ++j) {
        Transfer& t = plan.transfers[id(c, h, j)];
        t.src_endpoint = cx.endpoints[from];
        t.dst_endpoint = cx.endpoints[to];
        t.bytes = bytes / chains / k;
        t.rate_cap_bytes_per_s = cap;
        if (h > 0) t.deps.push_back(id(c, h - 1, j));  // the chunk arrived at this hop's sender
        if (j > 0) t.deps.push_back(id(c, h, j - 1));  // the sender's previous chunk
      }
    }
  }
  plan.why.push_back(fmt::format("ring chain: {} hops {} rank 0, {} in {} pipelined chunk(s){}", hops,
                                 towards_first ? "towards" : "from", units::format_size(bytes), k,
                                 chains > 1 ? fmt::format(", shared by {} chains leaving the nodes on their own rails",
                                                          chains)
                                            : std::string()));
  return plan;
}
}  // namespace

std::optional<CollectivePlan> ring_broadcast(const OpDesc& op, const CollectiveContext& cx) {
  return chain(cx, static_cast<double>(op.bytes), false);
}

std::optional<CollectivePlan> ring_reduce(const OpDesc& op, const CollectiveContext& cx) {
  return chain(cx, static_cast<double>(op.bytes), true);
}

double estimate_ring_chain_s(const OpDesc& op, const CollectiveContext& cx) {
  // The chain fills in n-1 hops of one chunk, then the other chunks follow one a hop time apart,
  // unless the busiest link (a node's ranks each forward every chain's share) takes longer.
  const double n = static_cast<double>(cx.endpoints.size());
  const double s = static_cast<double>(op.bytes);
  const double k = static_cast<double>(chunks_for(s, cx.protocol, kMaxChainChunks));
  const RingOrders orders = chain_orders(cx);
  const auto chains = static_cast<std::uint32_t>(orders.size());
  double hop_bw = sim::kUnlimitedRate, hop_latency_s = 0;
  for (const auto& order : orders) {
    for (std::size_t i = 0; i + 1 < order.size(); ++i) {
      hop_bw = std::min(hop_bw, route_bytes_per_s(cx, order[i], order[i + 1]));
      hop_latency_s = std::max(hop_latency_s, cx.machine.route(cx.endpoints[order[i]], cx.endpoints[order[i + 1]]).latency_s);
    }
  }
  const double alpha = cx.protocol.step_latency_s + hop_latency_s;
  const double bw = payload_rate(cx, std::min(hop_bw, channel_cap(s / chains, cx.protocol, chains)));
  const double hop_s = alpha + s / chains / k / bw;
  const CollectivePlan whole = chain(cx, s, false, 1);
  return (n - 1.0) * hop_s + std::max((k - 1.0) * hop_s, busiest_link_s(cx, whole.transfers) / cx.protocol.payload);
}

}  // namespace syntorch::runtime::detail
