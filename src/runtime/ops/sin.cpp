// sin: the sine per element in fp32 (range reduction and the special-function units: about 4
// operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sin_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::sin, "sin");

}  // namespace syntorch::runtime::ops
