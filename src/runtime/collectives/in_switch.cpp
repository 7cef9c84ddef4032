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
  const double chunk = bytes / k, share = chunk / local, segment = share / nodes;
  const std::uint32_t steps = 2 * (nodes - 1);  // the rail ring between nodes: reduce-scatter, then all-gather
  const double wire = 1 / cx.library.in_switch_efficiency;  // switch traffic on the wire per payload byte
  CollectivePlan plan;
  plan.algorithm = std::move(name);
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.launch_latency_s = cx.library.in_switch_latency_s;
  plan.bytes_per_rank = bytes + bytes / local + steps * bytes / local / nodes;
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
  std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>> ring(steps, grid());
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
    for (std::uint32_t s = 0; s < steps; ++s) {
      for (std::uint32_t ni = 0; ni < nodes; ++ni) {
        for (std::uint32_t l = 0; l < local; ++l) {
          const std::uint32_t prev = (ni + nodes - 1) % nodes;
          // A point-to-point ring: each chunk pays the synchronisation, the channel's previous one too.
          std::vector<std::uint32_t> deps{scattered[ni][l][j]};
          if (s > 0) deps.push_back(ring[s - 1][prev][l][j]);  // the segment this rank forwards
          if (j > 0) deps.push_back(ring[s][ni][l][j - 1]);
          ring[s][ni][l][j] = add(cx.endpoints[layout.nodes[ni][l]], cx.endpoints[layout.nodes[(ni + 1) % nodes][l]],
                                  segment, deps, share_cap, kNoTransfer);
        }
      }
    }
    for (std::uint32_t ni = 0; ni < nodes; ++ni) {
      const std::vector<std::uint32_t>& ranks = layout.nodes[ni];
      const std::uint32_t sw = layout.switch_endpoint[ni];
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t prev = (ni + nodes - 1) % nodes;
        // The share is whole once it is reduced here and every ring step into this rank has arrived.
        std::vector<std::uint32_t> deps{scattered[ni][l][j]};
        for (std::uint32_t s = 0; s < steps; ++s) deps.push_back(ring[s][prev][l][j]);
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
  double t = cx.library.in_switch_latency_s + 4 * alpha_intra + (1 + 1 / local) * s / intra_bw;
  if (nodes > 1) {
    const std::uint32_t c = layout.nodes[1][0];
    const double inter_bw = std::min(route_bytes_per_s(cx, a, c), channel_cap(s / local, cx.protocol));
    const double alpha_inter = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[c]).latency_s;
    t += 2 * (nodes - 1) * alpha_inter + 2 * (nodes - 1) / nodes * (s / local) / inter_bw;
  }
  return t;
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
