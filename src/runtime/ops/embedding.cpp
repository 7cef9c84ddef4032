// embedding: `tokens` rows of width `hidden` gathered from a table of `vocab` rows; one CTA per
// token reads its row and writes it out (kernels/rowwise.cpp).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType embedding_op{
    .kind = OpKind::embedding,
    .name = "embedding",
    .params = kEmbeddingParams,
    .implementations = kFusedOnly,
    .check = &check_embedding,
    .describe = &describe_embedding,
    .flops = &no_flops,
    .min_bytes =
        [](const OpDesc& op) {
          return 2.0 * static_cast<double>(op.rows) * static_cast<double>(op.cols) * element_bytes(op.dtype);
        },
    .lower = &detail::lower_embedding,
};

}  // namespace syntorch::runtime::ops
