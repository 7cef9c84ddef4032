// topk: the k largest values of each row of [rows, cols] and their indices. A mixture-of-experts
// router runs it over its gate logits (one row per token, one column per expert) fused with the
// softmax that turns them into routing weights, as vLLM's topk_softmax and TensorRT-LLM's
// routing kernels do (kernels/moe.cpp). torch::topk launches the same op: PyTorch's kernel writes
// values in the input's dtype and int64 indices instead, a few bytes per kept value apart.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"rows", "rows (tokens, for a router)", &OpDesc::rows},
                               {"cols", "columns (experts, for a router)", &OpDesc::cols},
                               {"top_k", "values kept per row (experts per token)", &OpDesc::k}};
}  // namespace

extern constinit const OpType topk_op{
    .kind = OpKind::topk,
    .name = "topk",
    .params = kParams,
    .implementations = kFusedOnly,
    .check =
        [](const OpDesc& op, OpCheck& c) {
          check_rows(op, c);
          c.need(op.k, "top_k");
          if (op.k > op.cols) c.error(fmt::format("topk: top_k {} exceeds the {} columns", op.k, op.cols));
        },
    .describe =
        [](const OpDesc& op) {
          return fmt::format("topk rows={} cols={} top_k={} {}", op.rows, op.cols, op.k, dtype_name(op.dtype));
        },
    // A softmax (6 operations per element) and k passes of comparisons.
    .flops = [](const OpDesc& op) { return rows_elements(op) * (6.0 + static_cast<double>(op.k)); },
    // The logits read once; an fp32 weight and an int32 index written per kept element.
    .min_bytes =
        [](const OpDesc& op) {
          return rows_elements(op) * element_bytes(op.dtype) + static_cast<double>(op.rows * op.k) * 8.0;
        },
    .lower = &detail::lower_topk,
};

}  // namespace syntorch::runtime::ops
