// neg: -x: one operation per element, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType neg_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::neg, "neg");

}  // namespace syntorch::runtime::ops
