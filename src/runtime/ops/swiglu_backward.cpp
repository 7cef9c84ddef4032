// swiglu_backward: the gradients of silu(gate) * up for `elements` outputs: one kernel reads dy,
// gate and up and writes d(gate) and d(up) side by side (the fused activation's backward in
// Megatron, Transformer Engine and Liger): about 12 fp32 operations per output.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType swiglu_backward_op =
    elementwise_type<detail::ElementwiseCost{12, 3, 2}>(OpKind::swiglu_backward, "swiglu_backward");

}  // namespace syntorch::runtime::ops
