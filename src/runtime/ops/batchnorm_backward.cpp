// batchnorm_backward: a batch norm's input gradient from the output's gradient and the input (two
// reads, one write), as PyTorch's batch_norm_backward_elemt; its reductions (the weight and bias
// gradients) run first as a sum over the same elements.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType batchnorm_backward_op =
    elementwise_type<detail::ElementwiseCost{6, 2, 1}>(OpKind::batchnorm_backward, "batchnorm_backward");

}  // namespace syntorch::runtime::ops
