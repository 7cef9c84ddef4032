// round: each element to an integral value (round, floor, ceil, trunc): one operation, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType round_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::round, "round");

}  // namespace syntorch::runtime::ops
