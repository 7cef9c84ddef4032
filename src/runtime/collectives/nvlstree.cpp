// NVLS tree all-reduce across nodes (NCCL's NVLS_TREE): within each node the ranks reduce-scatter
// through their NVSwitch (every rank sends the whole message up, the switch returns each its
// reduced 1/L share), the ranks of one local index (a rail, one per node) all-reduce their share
// between nodes, and each node all-gathers through its switch (every rank sends its share up,
// the switch multicasts all of them down). Each rank's NVLink carries the message about once
// each way and its network link only 2(N-1)/N of a 1/L share, where a flat ring would send
// 2(n-1)/n of the whole message through the slowest link. NCCL runs the inter-node part as a
// tree; with the two to a few nodes of the bundled configs it is built here as a ring of the
// rail's ranks (the same bytes, N-1 more latencies than a tree's log N). Offered only where the
// ranks form several equal nodes, each with a reducing switch between its ranks.

#include <fmt/format.h>

#include <limits>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

struct Layout {
  std::vector<std::vector<std::uint32_t>> nodes;  // ranks per node
  std::vector<std::uint32_t> switch_endpoint;      // per node
};

std::optional<Layout> layout_of(const CollectiveContext& cx) {
  Layout l;
  l.nodes = nodes_of(cx);
  if (l.nodes.size() < 2 || l.nodes.front().size() < 2) return std::nullopt;
  for (const auto& node : l.nodes) {
    const std::optional<std::uint32_t> sw = reducing_switch(cx, node);
    if (!sw) return std::nullopt;
    l.switch_endpoint.push_back(cx.machine.switches()[*sw].endpoint);
  }
  return l;
}

}  // namespace

std::optional<CollectivePlan> nvlstree_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<Layout> layout = layout_of(cx);
  if (!layout) return std::nullopt;
  const auto nodes = static_cast<std::uint32_t>(layout->nodes.size());
  const auto local = static_cast<std::uint32_t>(layout->nodes.front().size());
  const double bytes = static_cast<double>(op.bytes);
  const auto k = static_cast<std::uint32_t>(chunks_for(bytes, cx.library));
  const double chunk = bytes / k, share = chunk / local, segment = share / nodes;
  const std::uint32_t steps = 2 * (nodes - 1);  // the rail ring: reduce-scatter, then all-gather
  CollectivePlan plan;
  plan.algorithm = "nvlstree";
  plan.step_latency_s = cx.library.step_latency_s;
  plan.bytes_per_rank = bytes + bytes / local + steps * bytes / local / nodes;
  auto add = [&](std::uint32_t src, std::uint32_t dst, double b, std::vector<std::uint32_t> deps, double cap) {
    Transfer t;
    t.src_endpoint = src;
    t.dst_endpoint = dst;
    t.bytes = b;
    t.rate_cap_bytes_per_s = cap;
    t.deps = std::move(deps);
    plan.transfers.push_back(std::move(t));
    return static_cast<std::uint32_t>(plan.transfers.size() - 1);
  };
  const double whole_cap = channel_cap(bytes, cx.library);
  const double share_cap = channel_cap(bytes / local, cx.library);
  // Indices by [node][local][chunk] (and ring step), filled in dependency order.
  auto grid = [&] { return std::vector<std::vector<std::vector<std::uint32_t>>>(nodes, std::vector<std::vector<std::uint32_t>>(local, std::vector<std::uint32_t>(k))); };
  auto up = grid(), scattered = grid(), gathered_up = grid(), multicast = grid();
  std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>> ring(steps, grid());
  for (std::uint32_t j = 0; j < k; ++j) {
    for (std::uint32_t ni = 0; ni < nodes; ++ni) {
      for (std::uint32_t l = 0; l < local; ++l) {
        std::vector<std::uint32_t> deps;
        if (j > 0) deps.push_back(up[ni][l][j - 1]);
        up[ni][l][j] = add(cx.endpoints[layout->nodes[ni][l]], layout->switch_endpoint[ni], chunk, deps, whole_cap);
      }
      for (std::uint32_t l = 0; l < local; ++l) {
        std::vector<std::uint32_t> deps;
        for (std::uint32_t r = 0; r < local; ++r) deps.push_back(up[ni][r][j]);  // the sum needs every rank's chunk
        if (j > 0) deps.push_back(scattered[ni][l][j - 1]);  // chunks leave in order
        scattered[ni][l][j] = add(layout->switch_endpoint[ni], cx.endpoints[layout->nodes[ni][l]], share, deps, share_cap);
      }
    }
    for (std::uint32_t s = 0; s < steps; ++s) {
      for (std::uint32_t ni = 0; ni < nodes; ++ni) {
        for (std::uint32_t l = 0; l < local; ++l) {
          const std::uint32_t prev = (ni + nodes - 1) % nodes;
          std::vector<std::uint32_t> deps{scattered[ni][l][j]};
          if (s > 0) deps.push_back(ring[s - 1][prev][l][j]);  // the segment this rank forwards
          if (j > 0) deps.push_back(ring[s][ni][l][j - 1]);
          ring[s][ni][l][j] = add(cx.endpoints[layout->nodes[ni][l]], cx.endpoints[layout->nodes[(ni + 1) % nodes][l]],
                                  segment, deps, share_cap);
        }
      }
    }
    for (std::uint32_t ni = 0; ni < nodes; ++ni) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t prev = (ni + nodes - 1) % nodes;
        // The share is whole once every ring step into this rank has arrived.
        std::vector<std::uint32_t> deps;
        for (std::uint32_t s = 0; s < steps; ++s) deps.push_back(ring[s][prev][l][j]);
        if (j > 0) deps.push_back(gathered_up[ni][l][j - 1]);
        gathered_up[ni][l][j] = add(cx.endpoints[layout->nodes[ni][l]], layout->switch_endpoint[ni], share, deps,
                                    share_cap);
      }
      for (std::uint32_t l = 0; l < local; ++l) {
        std::vector<std::uint32_t> deps;
        for (std::uint32_t r = 0; r < local; ++r) deps.push_back(gathered_up[ni][r][j]);  // multicast of every share
        if (j > 0) deps.push_back(multicast[ni][l][j - 1]);
        multicast[ni][l][j] = add(layout->switch_endpoint[ni], cx.endpoints[layout->nodes[ni][l]], chunk, deps, whole_cap);
      }
    }
  }
  plan.why.push_back(fmt::format("nvlstree: {} nodes of {} ranks; reduce-scatter through each node's switch, a ring of "
                                 "{} along each rail for 1/{} of the message, all-gather through the switch; {} "
                                 "chunk(s) of {}",
                                 nodes, local, nodes, local, k, units::format_size(chunk)));
  return plan;
}

double estimate_nvlstree_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<Layout> layout = layout_of(cx);
  if (!layout) return std::numeric_limits<double>::infinity();
  const double nodes = static_cast<double>(layout->nodes.size());
  const double local = static_cast<double>(layout->nodes.front().size());
  const double s = static_cast<double>(op.bytes);
  const std::uint32_t a = layout->nodes[0][0], b = layout->nodes[0][1], c = layout->nodes[1][0];
  const double intra_bw = std::min(route_bytes_per_s(cx, a, b), channel_cap(s, cx.library));
  const double inter_bw = std::min(route_bytes_per_s(cx, a, c), channel_cap(s / local, cx.library));
  const double alpha_intra = cx.library.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[b]).latency_s;
  const double alpha_inter = cx.library.step_latency_s + cx.machine.route(cx.endpoints[a], cx.endpoints[c]).latency_s;
  return 4 * alpha_intra + 2 * s / intra_bw + 2 * (nodes - 1) * alpha_inter +
         2 * (nodes - 1) / nodes * (s / local) / inter_bw;
}

}  // namespace syntorch::runtime::detail
