// tanh: tanh(x): one special-function instruction per element, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType tanh_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::tanh, "tanh");

}  // namespace syntorch::runtime::ops
