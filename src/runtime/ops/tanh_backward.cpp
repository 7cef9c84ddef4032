// tanh_backward: dy * (1 - y^2) from dy and the saved output: 3 operations per element, two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType tanh_backward_op =
    elementwise_type<detail::ElementwiseCost{3, 2}>(OpKind::tanh_backward, "tanh_backward");

}  // namespace syntorch::runtime::ops
