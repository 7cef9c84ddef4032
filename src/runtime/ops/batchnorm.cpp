// batchnorm: a batch norm's normalising pass (x read, y written with per-channel statistics and
// affine parameters), as PyTorch's batch_norm_elemt kernel; training first reduces the statistics
// (a sum over the same elements).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType batchnorm_op =
    elementwise_type<detail::ElementwiseCost{4, 1, 1}>(OpKind::batchnorm, "batchnorm");

}  // namespace syntorch::runtime::ops
