// polar: abs * (cos(angle) + i sin(angle)), a complex element from two real ones (the rotary
// tables' torch.polar): a sine and a cosine per element, about 8 operations. Costed in the complex
// output's dtype, whose element is as wide as the two real inputs together: one input read.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType polar_op = elementwise_type<detail::ElementwiseCost{8, 1}>(OpKind::polar, "polar");

}  // namespace syntorch::runtime::ops
