// sub: a - b, elementwise: one operation, two inputs read per element.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sub_op = elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::sub, "sub");

}  // namespace syntorch::runtime::ops
