// rmsnorm: scale each row of [rows, cols] by the inverse root of its mean square, then by a weight.
// Per element in fp32: sum of squares, scale, weight (5 operations); one pass over the row.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType rmsnorm_op = rowwise_type<detail::RowCost{5, 1}>(OpKind::rmsnorm, "rmsnorm");

}  // namespace syntorch::runtime::ops
