// moe_unpermute: a mixture-of-experts layer's combine on one device. Each token's `top_k` expert
// outputs are read back from the grouped buffer, scaled by their routing weights and summed into
// one row of width `hidden` (TensorRT-LLM's finalizeMoeRouting, vLLM's moe_sum, Megatron's
// unpermute; kernels/moe.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType moe_unpermute_op{
    .kind = OpKind::moe_unpermute,
    .name = "moe_unpermute",
    .params = kMoeRowsParams,
    .implementations = kFusedOnly,
    .check = &check_moe_rows,
    .describe = &describe_moe_rows,
    // A multiply and an add per expert output element.
    .flops = [](const OpDesc& op) { return 2.0 * static_cast<double>(op.rows * op.k) * static_cast<double>(op.cols); },
    // top_k rows read per token, one written.
    .min_bytes = [](const OpDesc& op) { return moe_row_bytes(op) * (1.0 + static_cast<double>(op.k)); },
    .lower = &detail::lower_moe_unpermute,
};

}  // namespace syntorch::runtime::ops
