// softmax_backward: dx = y * (dy - sum(dy * y)) over each row of [rows, cols], from the saved
// output y and dy (log_softmax's backward, dy - exp(y) * sum(dy), costs the same): a row sum,
// then the combination, 4 fp32 operations an element; a row too long for one warp is read twice.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType softmax_backward_op =
    rowwise_type<detail::RowCost{4, 2, 2}>(OpKind::softmax_backward, "softmax_backward");

}  // namespace syntorch::runtime::ops
