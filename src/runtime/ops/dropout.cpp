// dropout: zero each element with probability p and scale the rest by 1/(1-p), in training: a
// quarter of a Philox4x32 draw per element amortised with a compare, a select and a scale (4
// operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType dropout_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::dropout, "dropout");

}  // namespace syntorch::runtime::ops
