// NVLS tree all-reduce across nodes (NCCL's NVLS_TREE): within each node the ranks reduce-scatter
// through their NVSwitch (every rank sends the whole message up, the switch returns each its
// reduced 1/L share), the ranks of one local index (a rail, one per node) all-reduce their share
// between nodes over a double binary tree, and each node all-gathers through its switch (every
// rank sends its share up, the switch multicasts all of them down). Each rank's NVLink carries the
// message about once each way and its network link a 1/L share: once each way between two nodes,
// twice beyond (an inner node of a tree takes two children's halves up and sends the total down to
// both), which is why a ring over all the nodes' rails overtakes it from three or four nodes on.
// Offered only where the ranks form several equal nodes, each with a reducing switch between its ranks.

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
  plan.why.push_back(fmt::format("nvlstree: {} nodes of {} ranks; reduce-scatter through each node's switch, a double "
                                 "binary tree of the {} nodes along each rail for 1/{} of the message, all-gather "
                                 "through the switch; {} chunk(s) of {}",
                                 nodes, local, nodes, local, k,
                                 units::format_size(static_cast<double>(op.bytes) / static_cast<double>(k))));
  return plan;
}

double estimate_nvlstree_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<SwitchLayout> layout = switch_layout(cx);
  return layout ? estimate_switch_allreduce_s(op, cx, *layout) : std::numeric_limits<double>::infinity();
}

}  // namespace syntorch::runtime::detail
