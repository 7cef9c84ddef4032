// conv_wgrad: a convolution's backward for the weights' gradient: the output's gradient against
// the input gathered through the filter's windows (k: every output position, so often split);
// an implicit GEMM as conv (conv.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType conv_wgrad_op = conv_type(OpKind::conv_wgrad, "conv_wgrad");

}  // namespace syntorch::runtime::ops
