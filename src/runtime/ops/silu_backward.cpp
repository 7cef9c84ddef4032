// silu_backward: dy * sigmoid(x) * (1 + x * (1 - sigmoid(x))) from dy and the saved input, in
// fp32: about 8 operations per element, two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType silu_backward_op =
    elementwise_type<detail::ElementwiseCost{8, 2}>(OpKind::silu_backward, "silu_backward");

}  // namespace syntorch::runtime::ops
