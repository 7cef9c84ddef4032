// leaky_relu: x where positive, else slope * x: a comparison and a multiply, one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType leaky_relu_op =
    elementwise_type<detail::ElementwiseCost{2, 1}>(OpKind::leaky_relu, "leaky_relu");

}  // namespace syntorch::runtime::ops
