// gelu_backward: dy * GELU'(x) from dy and the saved input, in fp32 (the derivative of the tanh
// form: about 20 operations per element), two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType gelu_backward_op =
    elementwise_type<detail::ElementwiseCost{20, 2}>(OpKind::gelu_backward, "gelu_backward");

}  // namespace syntorch::runtime::ops
