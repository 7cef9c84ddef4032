// leaky_relu_backward: dy where the saved input is positive, else slope * dy: two operations per
// element, two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType leaky_relu_backward_op =
    elementwise_type<detail::ElementwiseCost{2, 2}>(OpKind::leaky_relu_backward, "leaky_relu_backward");

}  // namespace syntorch::runtime::ops
