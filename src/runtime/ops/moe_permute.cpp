// moe_permute: a mixture-of-experts layer's dispatch on one device. Each of `tokens` rows of
// width `hidden` goes to the `top_k` experts its router chose: the rows are copied, grouped by
// expert, into one [tokens x top_k, hidden] buffer that the grouped GEMM reads (TensorRT-LLM's
// expandInputRows, Megatron's permute; kernels/moe.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType moe_permute_op{
    .kind = OpKind::moe_permute,
    .name = "moe_permute",
    .params = kMoeRowsParams,
    .implementations = kFusedOnly,
    .check = &check_moe_rows,
    .describe = &describe_moe_rows,
    .flops = &no_flops,
    // Every token read once, written top_k times.
    .min_bytes = [](const OpDesc& op) { return moe_row_bytes(op) * (1.0 + static_cast<double>(op.k)); },
    .lower = &detail::lower_moe_permute,
};

}  // namespace syntorch::runtime::ops
