// conv: a convolution's forward as an implicit GEMM (kernels/conv.cpp): m output positions
// (batch x output pixels), n output channels and k input channels x filter positions per group.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

const OpParam kConvParams[8] = {
    {"m", "GEMM rows: output positions (batch x output pixels) for conv, input positions for conv_dgrad, "
          "output channels per group for conv_wgrad", &OpDesc::m},
    {"n", "GEMM columns: output channels per group (conv), input channels per group (conv_dgrad), input "
          "channels per group x filter positions (conv_wgrad)", &OpDesc::n},
    {"k", "GEMM depth: input channels per group x filter positions (conv), output channels per group x filter "
          "positions (conv_dgrad), output positions (conv_wgrad)", &OpDesc::k},
    {"groups", "channel groups (1: a dense convolution)", &OpDesc::batch},
    {"elements", "elements of the gathered tensor (the input for conv and conv_wgrad, the output's gradient "
                 "for conv_dgrad)", &OpDesc::elements},
    {"window", "filter positions (kh x kw x kd)", &OpDesc::window},
    {"stride", "the filter's step (1 when not given)", &OpDesc::stride},
    {"channels_last", "NHWC tensors (NCHW ones are transposed around a matrix-unit kernel)", nullptr,
     &OpDesc::channels_last},
};

void conv_defaults(OpDesc& op) {
  if (op.stride == 0) op.stride = 1;
  if (op.batch == 0) op.batch = 1;
}

void check_conv(const OpDesc& op, OpCheck& c) {
  check_matmul(op, c);
  c.need(op.elements, "elements");
  c.need(op.window, "window");
  c.need(op.stride, "stride");
}

std::string describe_conv(const OpDesc& op) {
  return fmt::format("{} m={} n={} k={} groups={} window={} stride={} elements={} {}{}", op_name(op.kind), op.m, op.n,
                     op.k, op.batch, op.window, op.stride, op.elements, dtype_name(op.dtype),
                     op.channels_last ? " channels_last" : "");
}

// The gathered tensor, the other operand and the result, each once.
double conv_min_bytes(const OpDesc& op) {
  const double g = static_cast<double>(op.batch);
  const double other = op.kind == OpKind::conv_wgrad ? g * static_cast<double>(op.m * op.k)
                                                     : g * static_cast<double>(op.k * op.n);
  return (static_cast<double>(op.elements) + other + g * static_cast<double>(op.m * op.n)) * element_bytes(op.dtype);
}

extern constinit const OpType conv_op = conv_type(OpKind::conv, "conv");

}  // namespace syntorch::runtime::ops
