// add: a + b, elementwise (broadcast to the output's elements): one operation, two inputs read per
// element.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType add_op = elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::add, "add");

}  // namespace syntorch::runtime::ops
