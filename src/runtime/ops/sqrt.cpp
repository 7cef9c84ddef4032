// sqrt: the square root per element (the special-function units' reciprocal square root and a
// multiply: about 2 operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sqrt_op = elementwise_type<detail::ElementwiseCost{2, 1}>(OpKind::sqrt, "sqrt");

}  // namespace syntorch::runtime::ops
