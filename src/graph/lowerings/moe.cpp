// A mixture of experts' fused kernels, as the torch layer runs them (syntorch's own operators in
// exported graphs): the router's top-k softmax, the tokens' permutation to their experts, the
// experts' grouped GEMMs and the weighted combination back.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/fused.hpp"

namespace syntorch::graph::lowerings {

namespace moe_ops {

Lowered topk_softmax(const Call& c) {
  auto [weights, ids] = torch::fused::topk_softmax(c.tensor("gating_output"), c.integer("k"));
  return std::vector{weights, ids};
}

Lowered moe_permute(const Call& c) {
  return std::vector{torch::fused::moe_permute(c.tensor("hidden"), c.tensor("expert_ids"))};
}

Lowered moe_unpermute(const Call& c) {
  return std::vector{torch::fused::moe_unpermute(c.tensor("expert_output"), c.tensor("routing_weights"))};
}

Lowered grouped_mm(const Call& c) {
  return std::vector{torch::fused::grouped_mm(c.tensor("input"), c.tensor("weight"), c.ints("group_rows"))};
}

constexpr Lowering kTable[] = {
    {"topk_softmax", "gating_output k", topk_softmax},
    {"moe_permute", "hidden expert_ids", moe_permute},
    {"moe_unpermute", "expert_output routing_weights", moe_unpermute},
    {"grouped_mm", "input weight group_rows", grouped_mm},
};

}  // namespace moe_ops

std::span<const Lowering> moe() { return moe_ops::kTable; }

}  // namespace syntorch::graph::lowerings
