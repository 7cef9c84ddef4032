// attention_backward: the gradients dQ, dK and dV of softmax(Q K^T) V from Q, K, V, the output,
// its gradient and the saved log-sum-exp, as FlashAttention's backward computes them: the scores
// recomputed, then dV = P^T dO, dP = dO V^T, dS = P (dP - D), dQ = dS K, dK = dS^T Q: five
// matrix products a score where the forward has two (kernels/attention.cpp).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "flash_v2", "flash_v3", "mem_efficient", "unfused"};
}  // namespace

extern constinit const OpType attention_backward_op{
    .kind = OpKind::attention_backward,
    .name = "attention_backward",
    .params = kAttentionParams,
    .implementations = kImpls,
    .defaults = &attention_defaults,
    .check = &check_attention,
    .describe = &describe_attention,
    // Five products of 2 x head_dim FLOPs a score against the forward's two.
    .flops = [](const OpDesc& op) { return 2.5 * attention_flops(op); },
    // Q, K, V, O, dO read; dQ, dK, dV written.
    .min_bytes = [](const OpDesc& op) { return 2.0 * attention_min_bytes(op); },
    .lower = &detail::lower_attention_backward,
};

}  // namespace syntorch::runtime::ops
