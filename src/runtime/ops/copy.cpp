// copy: a strided copy (contiguous, clone, a dtype conversion, concatenation, a fill): one move per
// element, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType copy_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::copy, "copy");

}  // namespace syntorch::runtime::ops
