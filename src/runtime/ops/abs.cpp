// abs: |x| per element: one operation, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType abs_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::abs, "abs");

}  // namespace syntorch::runtime::ops
