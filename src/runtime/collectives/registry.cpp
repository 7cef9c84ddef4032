#include <array>

#include "collectives.hpp"

namespace syntorch::runtime::detail {

std::span<const CollectiveAlgorithm> collective_algorithms() {
  static constexpr std::array<CollectiveAlgorithm, 6> kAlgorithms{{
      {OpKind::allreduce, "ring", &ring_allreduce},
      {OpKind::allreduce, "in_switch", &in_switch_allreduce},
      {OpKind::allreduce, "tree", &tree_allreduce},
      {OpKind::allgather, "ring", &ring_allgather},
      {OpKind::reducescatter, "ring", &ring_reducescatter},
      {OpKind::sendrecv, "direct", &direct_sendrecv},
  }};
  return kAlgorithms;
}

}  // namespace syntorch::runtime::detail
