// mul: a * b, elementwise: one operation, two inputs read per element.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType mul_op = elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::mul, "mul");

}  // namespace syntorch::runtime::ops
