// relu_backward: dy where the saved output is positive, else 0 (ATen's threshold_backward): one
// operation per element, two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType relu_backward_op =
    elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::relu_backward, "relu_backward");

}  // namespace syntorch::runtime::ops
