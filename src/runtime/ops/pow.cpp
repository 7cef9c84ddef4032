// pow: x ** exponent (a number) per element: exp2(exponent * log2(x)) on the special-function
// units, about 4 operations; one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType pow_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::pow, "pow");

}  // namespace syntorch::runtime::ops
