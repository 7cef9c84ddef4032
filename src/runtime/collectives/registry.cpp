#include <array>
#include <optional>
#include <string_view>

#include "collectives.hpp"

namespace syntorch::runtime::detail {

std::span<const CollectiveAlgorithm> collective_algorithms() {
  static constexpr std::array<CollectiveAlgorithm, 12> kAlgorithms{{
      {OpKind::allreduce, "ring", &ring_allreduce, &estimate_ring_allreduce_s, "", true},
      {OpKind::allreduce, "in_switch", &in_switch_allreduce, &estimate_in_switch_allreduce_s,
       "a switch with in_switch_reduction on every rank's route (dgx_h100 and hgx_h200 have one)"},
      {OpKind::allreduce, "tree", &tree_allreduce, &estimate_tree_allreduce_s, "", true},
      {OpKind::allreduce, "nvlstree", &nvlstree_allreduce, &estimate_nvlstree_allreduce_s,
       "several nodes of the same size, each with a switch that reduces between its ranks (dgx_h100_x2 has two)"},
      {OpKind::allreduce, "direct", &direct_allreduce, &estimate_direct_allreduce_s,
       "a full mesh: a link of its own between every pair of ranks (mi300x_x8 has one)", true},
      {OpKind::allgather, "ring", &ring_allgather, &estimate_ring_gather_s, "", true},
      {OpKind::reducescatter, "ring", &ring_reducescatter, &estimate_ring_gather_s, "", true},
      {OpKind::broadcast, "ring", &ring_broadcast, &estimate_ring_chain_s, "", true},
      {OpKind::reduce, "ring", &ring_reduce, &estimate_ring_chain_s, "", true},
      {OpKind::sendrecv, "direct", &direct_sendrecv},
      {OpKind::alltoall, "pairwise", &pairwise_alltoall, &estimate_pairwise_alltoall_s},
      {OpKind::alltoall, "hierarchical", &hierarchical_alltoall, &estimate_hierarchical_alltoall_s,
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
