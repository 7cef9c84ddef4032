// layernorm: normalise each row of [rows, cols] to zero mean and unit variance, then scale and
// shift. Per element in fp32: mean and variance (Welford), normalise, scale, shift (8 operations);
// one pass over the row.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType layernorm_op = rowwise_type<detail::RowCost{8, 1}>(OpKind::layernorm, "layernorm");

}  // namespace syntorch::runtime::ops
