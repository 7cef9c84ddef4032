// sign: -1, 0 or 1 per element (sgn alike): one operation, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sign_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::sign, "sign");

}  // namespace syntorch::runtime::ops
