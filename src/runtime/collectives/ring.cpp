// Ring algorithms: all-reduce is a reduce-scatter (n-1 steps) then an all-gather (n-1 steps);
// each step every rank sends one segment of bytes/n to the next rank, so each rank sends
// 2(n-1)/n of the message (all-gather and reduce-scatter alone: (n-1)/n). Across several nodes
// the segment is shared by several rings (NCCL's channels), each leaving the nodes through a
// different rank's network link, so that every rail of a node carries its part at once.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

std::uint64_t chunks_for(double bytes, const hw::CollectiveProtocol& lib, std::uint64_t max_chunks) {
  if (lib.chunk_bytes <= 0) return 1;
  const double per_chunk = lib.chunk_bytes * lib.channels;
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(bytes / per_chunk)), 1, max_chunks);
}

double channel_cap(double bytes, const hw::CollectiveProtocol& lib, std::uint32_t ways) {
  if (lib.channel_bandwidth_bytes_per_s <= 0) return sim::kUnlimitedRate;
  const double channels = std::max(1.0, static_cast<double>(lib.channels) / ways);
  const double wanted = lib.chunk_bytes > 0 ? std::ceil(bytes / lib.chunk_bytes) : channels;
  return std::clamp(wanted, 1.0, channels) * lib.channel_bandwidth_bytes_per_s;
}

double ring_bandwidth(const CollectiveContext& cx) {
  double bw = sim::kUnlimitedRate;
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  for (std::uint32_t i = 0; i < n; ++i) bw = std::min(bw, route_bytes_per_s(cx, i, (i + 1) % n));
  return bw;
}

double ring_hop_latency(const CollectiveContext& cx) {
  double lat = 0;
  const std::size_t n = cx.endpoints.size();
  for (std::size_t i = 0; i < n; ++i) {
    lat = std::max(lat, cx.machine.route(cx.endpoints[i], cx.endpoints[(i + 1) % n]).latency_s);
  }
  return lat;
}

RingOrders ring_orders(const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  RingOrders single(1, std::vector<std::uint32_t>(n));
  for (std::uint32_t i = 0; i < n; ++i) single[0][i] = i;
  const std::vector<std::vector<std::uint32_t>>& nodes = nodes_of(cx);
  if (nodes.size() < 2 || nodes.front().size() < 2) return single;
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  const std::uint32_t rings = std::min(local, std::max(1u, cx.protocol.channels));
  RingOrders orders(rings);
  for (std::uint32_t r = 0; r < rings; ++r) {
    for (std::uint32_t ni = 0; ni < nodes.size(); ++ni) {
      // Even nodes from local rank r forwards (leaving at r-1), odd ones from r-1 backwards
      // (leaving at r): each crossing joins ranks of one local index, on one rail (but the last
      // node's back to node 0 when the nodes are odd in number).
      for (std::uint32_t step = 0; step < local; ++step) {
        const std::uint32_t l = ni % 2 == 0 ? (r + step) % local : (r + 2 * local - 1 - step) % local;
        orders[r].push_back(nodes[ni][l]);
      }
    }
  }
  return orders;
}

double ring_step_s(const CollectiveContext& cx, const RingOrders& orders, double segment_bytes) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const auto rings = static_cast<std::uint32_t>(orders.size());
  const double share = segment_bytes / rings;
  std::vector<Transfer> step;  // every ring's share over each of its hops
  step.reserve(static_cast<std::size_t>(rings) * n);
  for (const auto& order : orders) {
    for (std::uint32_t i = 0; i < n; ++i) {
      Transfer t;
      t.src_endpoint = cx.endpoints[order[i]];
      t.dst_endpoint = cx.endpoints[order[(i + 1) % n]];
      t.bytes = share;
      step.push_back(std::move(t));
    }
  }
  const double step_s = std::max(share / channel_cap(share, cx.protocol, rings), busiest_link_s(cx, step));
  return step_s / cx.protocol.payload;
}

CollectivePlan ring(const CollectiveContext& cx, std::uint32_t steps, double segment_bytes, std::string name) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const RingOrders orders = ring_orders(cx);
  const auto rings = static_cast<std::uint32_t>(orders.size());
  const double share = segment_bytes / rings;
  const auto k = static_cast<std::uint32_t>(chunks_for(share, cx.protocol));
  const double cap = channel_cap(share, cx.protocol, rings);
  CollectivePlan plan;
  plan.algorithm = std::move(name);
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = steps * segment_bytes;
  plan.transfers.resize(static_cast<std::size_t>(rings) * steps * n * k);
  // Transfer (q, s, i, j): in ring q's step s, the rank at position i sends chunk j to the next.
  auto id = [&](std::uint32_t q, std::uint32_t s, std::uint32_t i, std::uint32_t j) {
    return ((static_cast<std::size_t>(q) * steps + s) * n + i) * k + j;
  };
  for (std::uint32_t q = 0; q < rings; ++q) {
    for (std::uint32_t s = 0; s < steps; ++s) {
      for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t j = 0; j < k; ++j) {
          Transfer& t = plan.transfers[id(q, s, i, j)];
          t.src_endpoint = cx.endpoints[orders[q][i]];
          t.dst_endpoint = cx.endpoints[orders[q][(i + 1) % n]];
          t.bytes = share / k;
          t.rate_cap_bytes_per_s = cap;
          if (s > 0) t.deps.push_back(static_cast<std::uint32_t>(id(q, s - 1, (i + n - 1) % n, j)));  // the chunk forwarded
          if (j > 0) t.deps.push_back(static_cast<std::uint32_t>(id(q, s, i, j - 1)));  // the channel's previous chunk
        }
      }
    }
  }
  if (rings > 1) {
    plan.why.push_back(fmt::format("{}: {} rings (one per rank of a node, each leaving the nodes on its own rail), "
                                   "{} steps x {} ranks, segments of {} shared between them in {} pipelined chunk(s)",
                                   plan.algorithm, rings, steps, n, units::format_size(segment_bytes), k));
  } else {
    plan.why.push_back(fmt::format("{}: {} steps x {} ranks, segments of {} in {} pipelined chunk(s)", plan.algorithm,
                                   steps, n, units::format_size(segment_bytes), k));
  }
  return plan;
}

std::optional<CollectivePlan> ring_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, 2 * (n - 1), static_cast<double>(op.bytes) / n, "ring");
}

std::optional<CollectivePlan> ring_allgather(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, n - 1, static_cast<double>(op.bytes) / n, "ring");
}

std::optional<CollectivePlan> ring_reducescatter(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, n - 1, static_cast<double>(op.bytes) / n, "ring");
}

namespace {
// `steps` steps of bytes/n per rank. Each rank forwards what the previous one sent it, so the steps run as a wavefront around the
// rings: a step costs what a hop costs on average (the step's synchronisation, the route's latency
// and the share's transfer), unless the busiest link takes longer. On a ring of equal hops (one
// node) that is the hop's latency plus its transfer; across nodes the network hops' latency hides
// behind the NVLink hops' speed while the network links stream.
double estimate_ring_s(const OpDesc& op, const CollectiveContext& cx, double steps) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const RingOrders orders = ring_orders(cx);
  const double segment = static_cast<double>(op.bytes) / n;
  const double share = segment / static_cast<double>(orders.size());
  const double cap = channel_cap(share, cx.protocol, static_cast<std::uint32_t>(orders.size()));
  double hops_s = 0;
  for (const auto& order : orders) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t a = order[i], b = order[(i + 1) % n];
      hops_s += cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[b]).latency_s +
                share / payload_rate(cx, std::min(route_bytes_per_s(cx, a, b), cap));
    }
  }
  const double mean_hop_s = hops_s / (static_cast<double>(orders.size()) * n);
  return steps * std::max(ring_step_s(cx, orders, segment), mean_hop_s);
}
}  // namespace

double estimate_ring_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  return estimate_ring_s(op, cx, 2.0 * static_cast<double>(cx.endpoints.size() - 1));
}

double estimate_ring_gather_s(const OpDesc& op, const CollectiveContext& cx) {
  return estimate_ring_s(op, cx, static_cast<double>(cx.endpoints.size() - 1));
}

}  // namespace syntorch::runtime::detail
