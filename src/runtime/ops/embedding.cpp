// embedding: `tokens` rows of width `hidden` gathered from a table of `vocab` rows; one CTA per
// token reads its row and writes it out (kernels/rowwise.cpp).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"tokens", "embedding tokens", &OpDesc::rows},
                               {"hidden", "embedding width", &OpDesc::cols},
                               {"vocab", "embedding table rows", &OpDesc::vocab}};
}  // namespace

extern constinit const OpType embedding_op{
    .kind = OpKind::embedding,
    .name = "embedding",
    .params = kParams,
    .implementations = kFusedOnly,
    .check =
        [](const OpDesc& op, OpCheck& c) {
          c.need(op.rows, "tokens");
          c.need(op.cols, "hidden");
          c.need(op.vocab, "vocab");
          c.fits({op.rows, op.cols}, "tokens*hidden");
          c.fits({op.vocab, op.cols}, "vocab*hidden");
        },
    .describe =
        [](const OpDesc& op) {
          return fmt::format("embedding tokens={} hidden={} vocab={} {}", op.rows, op.cols, op.vocab,
                             dtype_name(op.dtype));
        },
    .flops = &no_flops,
    .min_bytes =
        [](const OpDesc& op) {
          return 2.0 * static_cast<double>(op.rows) * static_cast<double>(op.cols) * element_bytes(op.dtype);
        },
    .lower = &detail::lower_embedding,
};

}  // namespace syntorch::runtime::ops
