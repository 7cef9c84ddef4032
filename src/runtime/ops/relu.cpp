// relu: max(x, 0): one operation per element, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType relu_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::relu, "relu");

}  // namespace syntorch::runtime::ops
