// silu: x * sigmoid(x) (SwiGLU's activation): negate, exp, add, reciprocal, multiply (5 fp32
// operations per element, exp counted as one special-function instruction), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType silu_op = elementwise_type<detail::ElementwiseCost{5, 1}>(OpKind::silu, "silu");

}  // namespace syntorch::runtime::ops
