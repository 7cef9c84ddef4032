// Broadcast and reduce as NCCL runs them: a pipelined chain along the ring. The message is cut
// into chunks; chunk j leaves rank i for rank i+1 once it has arrived at rank i (for reduce, once
// rank i has added its own share) and once rank i sent chunk j-1, so after the chain fills, every
// link carries the whole message once. The chain starts at the group's first rank: on the
// machines' symmetric topologies which rank is the root does not change the time.

#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {
// A chain fills in n - 1 hops of one chunk: cut finer than a ring's segments, so that filling it
// costs what the library's own chunk size makes it cost, not a simulation limit.
constexpr std::uint64_t kMaxChainChunks = 256;

CollectivePlan chain(const CollectiveContext& cx, double bytes, bool towards_first) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const auto k = static_cast<std::uint32_t>(chunks_for(bytes, cx.protocol, kMaxChainChunks));
  CollectivePlan plan;
  plan.algorithm = "ring";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = bytes;
  const std::uint32_t hops = n - 1;
  plan.transfers.resize(static_cast<std::size_t>(hops) * k);
  auto id = [&](std::uint32_t h, std::uint32_t j) { return h * k + j; };
  const double cap = channel_cap(bytes, cx.protocol);
  for (std::uint32_t h = 0; h < hops; ++h) {
    // Broadcast: hop h goes from rank h to h+1. Reduce: towards the first rank, from n-1-h to n-2-h.
    const std::uint32_t from = towards_first ? n - 1 - h : h;
    const std::uint32_t to = towards_first ? n - 2 - h : h + 1;
    for (std::uint32_t j = 0; j < k; ++j) {
      Transfer& t = plan.transfers[id(h, j)];
      t.src_endpoint = cx.endpoints[from];
      t.dst_endpoint = cx.endpoints[to];
      t.bytes = bytes / k;
      t.rate_cap_bytes_per_s = cap;
      if (h > 0) t.deps.push_back(id(h - 1, j));  // the chunk arrived at this hop's sender
      if (j > 0) t.deps.push_back(id(h, j - 1));  // the sender's previous chunk
    }
  }
  plan.why.push_back(fmt::format("ring chain: {} hops {} rank 0, {} in {} pipelined chunk(s)", hops,
                                 towards_first ? "towards" : "from", units::format_size(bytes), k));
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
  // The chain fills in n-1 hops of one chunk, then the other chunks follow one a hop time apart.
  const double n = static_cast<double>(cx.endpoints.size());
  const double s = static_cast<double>(op.bytes);
  const double k = static_cast<double>(chunks_for(s, cx.protocol, kMaxChainChunks));
  const double alpha = cx.protocol.step_latency_s + ring_hop_latency(cx);
  const double bw = payload_rate(cx, std::min(ring_bandwidth(cx), channel_cap(s, cx.protocol)));
  return (n - 1.0 + k - 1.0) * (alpha + s / k / bw);
}

}  // namespace syntorch::runtime::detail
