// softmax: exp(x - max) / sum along each row of [rows, cols]. Per element in fp32: max and sum
// online, then exp and divide (6 operations); a row too long for one warp is read twice (online
// softmax).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType softmax_op = rowwise_type<detail::RowCost{6, 2}>(OpKind::softmax, "softmax");

}  // namespace syntorch::runtime::ops
