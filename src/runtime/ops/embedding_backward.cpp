// embedding_backward: the dense gradient of an embedding table [vocab, hidden] from the gradients
// of `tokens` looked-up rows (kernels: lower_embedding_backward).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"tokens", "embedding tokens", &OpDesc::rows},
                               {"hidden", "embedding width", &OpDesc::cols},
                               {"vocab", "embedding table rows", &OpDesc::vocab}};
}  // namespace

extern constinit const OpType embedding_backward_op{
    .kind = OpKind::embedding_backward,
    .name = "embedding_backward",
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
          return fmt::format("embedding_backward tokens={} hidden={} vocab={} {}", op.rows, op.cols, op.vocab,
                             dtype_name(op.dtype));
        },
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
