// embedding_backward: the dense gradient of an embedding table [vocab, hidden] from the gradients
// of `tokens` looked-up rows (kernels: lower_embedding_backward).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType embedding_backward_op{
    .kind = OpKind::embedding_backward,
    .name = "embedding_backward",
    .params = kEmbeddingParams,
    .implementations = kFusedOnly,
    .check = &check_embedding,
    .describe = &describe_embedding,
    // One add per token element.
    .flops = [](const OpDesc& op) { return static_cast<double>(op.rows) * static_cast<double>(op.cols); },
    // The token gradients read once, the table written once.
    .min_bytes =
        [](const OpDesc& op) {
          return static_cast<double>(op.rows + op.vocab) * static_cast<double>(op.cols) * element_bytes(op.dtype);
        },
    .lower = &detail::lower_embedding_backward,
};

}  // namespace syntorch::runtime::ops
