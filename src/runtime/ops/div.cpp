// div: a / b, elementwise: one operation, two inputs read per element (memory-bound: the division's
// extra instructions stay hidden behind HBM).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType div_op = elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::div, "div");

}  // namespace syntorch::runtime::ops
