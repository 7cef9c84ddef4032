// maximum: the larger (minimum: the smaller) of two broadcast operands per element: one
// comparison, two inputs.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType maximum_op = elementwise_type<detail::ElementwiseCost{1, 2}>(OpKind::maximum, "maximum");

}  // namespace syntorch::runtime::ops
