// gelu: x * Phi(x), in the tanh form PyTorch's kernels compute in fp32: 14 operations per element,
// one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType gelu_op = elementwise_type<detail::ElementwiseCost{14, 1}>(OpKind::gelu, "gelu");

}  // namespace syntorch::runtime::ops
