// rsqrt: 1 / sqrt(x) per element (one special-function instruction), one input: RMSNorm written
// by hand (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType rsqrt_op = elementwise_type<detail::ElementwiseCost{1, 1}>(OpKind::rsqrt, "rsqrt");

}  // namespace syntorch::runtime::ops
