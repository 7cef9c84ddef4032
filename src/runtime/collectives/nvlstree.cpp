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

std::optional<CollectivePlan> nvlstree_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<SwitchLayout> layout = switch_layout(cx);
  if (!layout) return std::nullopt;
  CollectivePlan plan = switch_allreduce(op, cx, *layout, "nvlstree");
  const std::size_t nodes = layout->nodes.size(), local = layout->nodes.front().size();
  const auto k = chunks_for(static_cast<double>(op.bytes), cx.protocol, kMaxSwitchChunks);
  plan.why.push_back(fmt::format("nvlstree: {} nodes of {} ranks; reduce-scatter through each node's switch, a ring of "
                                 "{} along each rail for 1/{} of the message, all-gather through the switch; {} "
                                 "chunk(s) of {}",
                                 nodes, local, nodes, local, k,
                                 units::format_size(static_cast<double>(op.bytes) / static_cast<double>(k))));
  return plan;
}

double estimate_nvlstree_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<SwitchLayout> layout = switch_layout(cx);
  return layout ? estimate_switch_allreduce_s(op, cx, *layout) : std::numeric_limits<double>::infinity();
}

}  // namespace syntorch::runtime::detail
