// conv_dgrad: a convolution's backward for the input's gradient: the output's gradient gathered
// through the filter's windows against the weights; an implicit GEMM as conv (conv.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType conv_dgrad_op = conv_type(OpKind::conv_dgrad, "conv_dgrad");

}  // namespace syntorch::runtime::ops
