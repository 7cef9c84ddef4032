// sigmoid: 1 / (1 + exp(-x)): negate, exp, add, reciprocal (4 fp32 operations per element), one
// input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sigmoid_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::sigmoid, "sigmoid");

}  // namespace syntorch::runtime::ops
