// Direct all-reduce on a full mesh (every pair of devices joined by its own link, as the eight
// MI300X of an Infinity Fabric board are): a reduce-scatter in which every rank sends each peer
// that peer's 1/n of the message at once, over all its links in parallel, then an all-gather in
// which every rank sends its reduced 1/n to every peer. Two steps, each moving (n-1)/n of the
// message per rank spread over n-1 links, where a ring would use one link per step. This is how
// RCCL fills the xGMI links of a fully connected MI300X board (its "one-shot"/direct paths); on a
// switched topology every send of a rank shares its one link, so the builder declines there and
// the library's ring, tree or in-switch reduction run instead.

#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {
// Whether every pair of participants has a one-hop route of its own (a full mesh of links).
bool full_mesh(const CollectiveContext& cx) {
  const std::size_t n = cx.endpoints.size();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t p = 0; p < n; ++p) {
      if (p == i) continue;
      const hw::Route& r = cx.machine.route(cx.endpoints[i], cx.endpoints[p]);
      if (r.hops.size() != 1 || !r.switches.empty()) return false;
    }
  }
  return n >= 2;
}

double slowest_pair_bandwidth(const CollectiveContext& cx) {
  double bw = sim::kUnlimitedRate;
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  for (std::uint32_t a = 0; a < n; ++a) {
    for (std::uint32_t b = 0; b < n; ++b) {
      if (a != b) bw = std::min(bw, route_bytes_per_s(cx, a, b));
    }
  }
  return bw;
}
}  // namespace

std::optional<CollectivePlan> direct_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  if (!full_mesh(cx)) return std::nullopt;
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const double segment = static_cast<double>(op.bytes) / n;
  const auto k = static_cast<std::uint32_t>(chunks_for(segment, cx.protocol));
  CollectivePlan plan;
  plan.algorithm = "direct";
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = 2.0 * (n - 1) * segment;
  // Transfer (phase, from, to, chunk); phase 0 reduce-scatter, 1 all-gather.
  auto id = [&](std::uint32_t phase, std::uint32_t from, std::uint32_t to, std::uint32_t j) {
    return ((phase * n + from) * n + to) * k + j;
  };
  plan.transfers.resize(static_cast<std::size_t>(2) * n * n * k);
  std::vector<bool> used(plan.transfers.size(), false);
  const double cap = channel_cap(segment, cx.protocol);
  for (std::uint32_t phase = 0; phase < 2; ++phase) {
    for (std::uint32_t from = 0; from < n; ++from) {
      for (std::uint32_t to = 0; to < n; ++to) {
        if (to == from) continue;
        for (std::uint32_t j = 0; j < k; ++j) {
          Transfer& t = plan.transfers[id(phase, from, to, j)];
          used[id(phase, from, to, j)] = true;
          t.src_endpoint = cx.endpoints[from];
          t.dst_endpoint = cx.endpoints[to];
          t.bytes = segment / k;
          t.rate_cap_bytes_per_s = cap;
          if (j > 0) t.deps.push_back(id(phase, from, to, j - 1));  // the channel's previous chunk
          if (phase == 1) {
            // `from` sends chunk j of its segment once every peer's chunk j of it has arrived.
            for (std::uint32_t q = 0; q < n; ++q) {
              if (q != from) t.deps.push_back(id(0, q, from, j));
            }
          }
        }
      }
    }
  }
  // Drop the unused self-transfer slots, renumbering the dependencies.
  std::vector<std::uint32_t> renumber(plan.transfers.size(), 0);
  std::vector<Transfer> kept;
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    if (!used[i]) continue;
    renumber[i] = static_cast<std::uint32_t>(kept.size());
    kept.push_back(std::move(plan.transfers[i]));
  }
  for (Transfer& t : kept) {
    for (std::uint32_t& d : t.deps) d = renumber[d];
    if (t.follows != kNoTransfer) t.follows = renumber[t.follows];
  }
  plan.transfers = std::move(kept);
  plan.why.push_back(fmt::format("direct: a full mesh of links; reduce-scatter then all-gather, each rank sending "
                                 "segments of {} to its {} peers at once, in {} pipelined chunk(s)",
                                 units::format_size(segment), n - 1, k));
  return plan;
}

double estimate_direct_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const double n = static_cast<double>(cx.endpoints.size());
  const double segment = static_cast<double>(op.bytes) / n;
  const double alpha = cx.protocol.step_latency_s + ring_hop_latency(cx);
  const double bw = payload_rate(cx, std::min(slowest_pair_bandwidth(cx), channel_cap(segment, cx.protocol)));
  return 2 * alpha + 2 * segment / bw;
}

}  // namespace syntorch::runtime::detail
