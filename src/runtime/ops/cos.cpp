// cos: the cosine per element in fp32 (range reduction and the special-function units: about 4
// operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType cos_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::cos, "cos");

}  // namespace syntorch::runtime::ops
