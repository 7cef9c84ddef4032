#include <array>
#include <optional>
#include <string_view>

#include "collectives.hpp"

namespace syntorch::runtime::detail {

std::span<const CollectiveAlgorithm> collective_algorithms() {
  static constexpr std::array<CollectiveAlgorithm, 10> kAlgorithms{{
      {OpKind::allreduce, "ring", &ring_allreduce},
      {OpKind::allreduce, "in_switch", &in_switch_allreduce,
       "a switch with in_switch_reduction on every rank's route (dgx_h100 and hgx_h200 have one)"},
      {OpKind::allreduce, "tree", &tree_allreduce},
      {OpKind::allreduce, "nvlstree", &nvlstree_allreduce,
       "several nodes of the same size, each with a switch that reduces between its ranks (dgx_h100_x2 has two)"},
      {OpKind::allreduce, "direct", &direct_allreduce,
       "a full mesh: a link of its own between every pair of ranks (mi300x_x8 has one)"},
      {OpKind::allgather, "ring", &ring_allgather},
      {OpKind::reducescatter, "ring", &ring_reducescatter},
      {OpKind::sendrecv, "direct", &direct_sendrecv},
      {OpKind::alltoall, "pairwise", &pairwise_alltoall},
      {OpKind::alltoall, "hierarchical", &hierarchical_alltoall,
       "ranks on several nodes, the same number on each (dgx_h100_x2 has two)"},
  }};
  return kAlgorithms;
}

std::optional<std::string_view> algorithm_for_alias(OpKind op, std::string_view name) {
  // NCCL's names for in-switch reduction: NVLS (NVLink SHARP) within a node, CollNet (SHARP in
  // the network's switches) across nodes; both reduce in a switch on every rank's route.
  if (op == OpKind::allreduce && (name == "nvls" || name == "collnet")) return "in_switch";
  return std::nullopt;
}

}  // namespace syntorch::runtime::detail
