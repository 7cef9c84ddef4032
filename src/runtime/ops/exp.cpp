// exp: e^x per element in fp32 (range reduction and a polynomial, or the special-function units:
// about 4 operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType exp_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::exp, "exp");

}  // namespace syntorch::runtime::ops
