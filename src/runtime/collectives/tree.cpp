// Tree all-reduce: a binary tree over the ranks (rank 0 the root, rank i's parent (i-1)/2).
// Each chunk is reduced up the tree (a rank forwards it once both children's copies arrived) and
// broadcast back down, pipelined chunk by chunk. Latency grows with log2(n) rather than n; each
// rank sends the whole message up and a parent sends it down once per child.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

std::optional<CollectivePlan> tree_allreduce(const OpDesc& op, const CollectiveContext& cx) {
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

// An inner node's link carries its two children's data in and its own out and down.
double estimate_tree_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const double n = static_cast<double>(cx.endpoints.size());
  const double s = static_cast<double>(op.bytes);
  const double alpha = cx.protocol.step_latency_s + ring_hop_latency(cx);
  const double bw = payload_rate(cx, std::min(ring_bandwidth(cx), channel_cap(s, cx.protocol)));
  return 2 * std::ceil(std::log2(n)) * alpha + 3 * s / bw;
}

}  // namespace syntorch::runtime::detail
