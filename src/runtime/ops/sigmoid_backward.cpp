// sigmoid_backward: dy * y * (1 - y) from dy and the saved output: 3 operations per element, two
// inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sigmoid_backward_op =
    elementwise_type<detail::ElementwiseCost{3, 2}>(OpKind::sigmoid_backward, "sigmoid_backward");

}  // namespace syntorch::runtime::ops
