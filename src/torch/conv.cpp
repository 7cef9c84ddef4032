// Convolutions and batch norm, with their backward: implicit GEMMs (runtime ops conv, conv_dgrad,
// conv_wgrad) and per-channel normalisation passes, as PyTorch's cuDNN and native CUDA paths run them.
#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch {

using detail::Grads;
using detail::impl_of;
using runtime::OpDesc;
using runtime::OpKind;

namespace {

// A convolution's geometry, checked: sizes, and the implicit GEMMs of its three passes.
struct ConvShape {
  std::int64_t n = 0, c_in = 0, c_out = 0, groups = 1;
  detail::Sizes in, kernel, out;  // spatial
  std::int64_t window = 1, in_positions = 1, out_positions = 1, step = 1;
  bool channels_last = false;
};

detail::Sizes per_dim(IntArrayRef v, std::size_t dims, const char* what, std::int64_t floor) {
  return detail::per_dim(v, dims, "convolution", what, floor);
}

// A transposed convolution is described as the convolution whose input gradient it computes: its
// output is that convolution's input, its input that convolution's output (weight [C_in,
// C_out / groups, *kernel] either way), so its forward is that convolution's conv_dgrad, its
// input's gradient that convolution's forward, its weight's gradient the same conv_wgrad.
ConvShape conv_shape(const Tensor& input, const Tensor& weight, IntArrayRef stride_arg, IntArrayRef padding_arg,
                     IntArrayRef dilation_arg, std::int64_t groups, bool transposed = false,
                     IntArrayRef output_padding_arg = {}) {
  detail::check_defined(input, "convolution", "input");
  detail::check_defined(weight, "convolution", "weight");
  detail::check_real(input, "convolution", "input");
  const auto& x = impl_of(input);
  const auto& w = impl_of(weight);
  if (x.sizes.size() < 3 || x.sizes.size() > 5) {
    detail::fail("convolution: expected a 3-D to 5-D input [N, C, *spatial], got {}", format_sizes(x.sizes));
  }
  if (w.sizes.size() != x.sizes.size()) {
    detail::fail("convolution: expected weight to be {}-D [C_out, C_in/groups, *kernel], got {}", x.sizes.size(),
                 format_sizes(w.sizes));
  }
  if (x.dtype != w.dtype) {
    detail::fail("convolution: Input type ({}) and weight type ({}) should be the same", scalar_type_name(x.dtype),
                 scalar_type_name(w.dtype));
  }
  if (groups < 1) detail::fail("convolution: non-positive groups is not supported, got {}", groups);
  ConvShape s;
  const std::size_t dims = x.sizes.size() - 2;
  s.n = x.sizes[0];
  s.groups = groups;
  if (transposed) {
    if (x.sizes[1] != w.sizes[0]) {
      detail::fail("convolution: Given transposed=1, weight of size {}, expected input{} to have {} channels, but got "
                   "{} channels instead",
                   format_sizes(w.sizes), format_sizes(x.sizes), w.sizes[0], x.sizes[1]);
    }
    if (w.sizes[0] % groups != 0) {
      detail::fail("convolution: in_channels ({}) must be divisible by groups ({})", w.sizes[0], groups);
    }
    const detail::Sizes stride = per_dim(stride_arg, dims, "stride", 1);
    const detail::Sizes padding = per_dim(padding_arg, dims, "padding", 0);
    const detail::Sizes dilation = per_dim(dilation_arg, dims, "dilation", 1);
    const detail::Sizes extra =
        output_padding_arg.empty() ? detail::Sizes(dims, 0) : per_dim(output_padding_arg, dims, "output_padding", 0);
    s.c_in = w.sizes[1] * groups;  // the described convolution's input: this one's output
    s.c_out = x.sizes[1];
    for (std::size_t i = 0; i < dims; ++i) {
      if (extra[i] >= std::max(stride[i], dilation[i])) {
        detail::fail("convolution: output padding must be smaller than either stride or dilation, but got "
                     "output_padding={}, stride={}, dilation={}",
                     extra[i], stride[i], dilation[i]);
      }
      const std::int64_t k = w.sizes[2 + i];
      const std::int64_t o = (x.sizes[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + extra[i] + 1;
      if (o <= 0) detail::fail("convolution: the transposed convolution's output size {} in dim {} is not positive", o, i);
      s.in.push_back(o);
      s.kernel.push_back(k);
      s.out.push_back(x.sizes[2 + i]);
      s.window *= k;
      s.in_positions *= o;
      s.out_positions *= x.sizes[2 + i];
      s.step = std::max({s.step, stride[i], dilation[i]});
    }
    s.channels_last = x.strides[1] == 1 && x.sizes[1] > 1;
    return s;
  }
  s.c_in = x.sizes[1];
  s.c_out = w.sizes[0];
  if (s.c_in != w.sizes[1] * groups) {
    detail::fail("convolution: Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} "
                 "channels instead",
                 groups, format_sizes(w.sizes), format_sizes(x.sizes), w.sizes[1] * groups, s.c_in);
  }
  if (s.c_out % groups != 0) {
    detail::fail("convolution: out_channels ({}) must be divisible by groups ({})", s.c_out, groups);
  }
  const detail::Sizes stride = per_dim(stride_arg, dims, "stride", 1);
  const detail::Sizes padding = per_dim(padding_arg, dims, "padding", 0);
  const detail::Sizes dilation = per_dim(dilation_arg, dims, "dilation", 1);
  for (std::size_t i = 0; i < dims; ++i) {
    const std::int64_t size = x.sizes[2 + i];
    const std::int64_t k = w.sizes[2 + i];
    const std::int64_t span = dilation[i] * (k - 1) + 1;
    if (size + 2 * padding[i] < span) {
      detail::fail("convolution: Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't "
                   "be greater than actual input size",
                   size + 2 * padding[i], span);
    }
    const std::int64_t o = (size + 2 * padding[i] - span) / stride[i] + 1;
    s.in.push_back(size);
    s.kernel.push_back(k);
    s.out.push_back(o);
    s.window *= k;
    s.in_positions *= size;
    s.out_positions *= o;
    s.step = std::max({s.step, stride[i], dilation[i]});
  }
  // Channels last: the channel dim the innermost (PyTorch's suggest_memory_format).
  s.channels_last = x.strides[1] == 1 && s.c_in > 1;
  return s;
}

OpDesc conv_op(OpKind kind, const ConvShape& s, ScalarType dtype) {
  OpDesc op;
  op.kind = kind;
  const bool tf32 = dtype == ScalarType::Float && get_cudnn_allow_tf32();
  op.dtype = tf32 ? DType::tf32 : to_runtime_dtype(dtype);
  op.batch = static_cast<std::uint64_t>(s.groups);
  op.window = static_cast<std::uint64_t>(s.window);
  op.stride = static_cast<std::uint64_t>(s.step);
  op.channels_last = s.channels_last;
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const std::int64_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  if (kind == OpKind::conv) {
    op.m = u(s.n * s.out_positions);
    op.n = u(cout_g);
    op.k = u(cin_g * s.window);
    op.elements = u(s.n * s.c_in * s.in_positions);
  } else if (kind == OpKind::conv_dgrad) {
    op.m = u(s.n * s.in_positions);
    op.n = u(cin_g);
    op.k = u(cout_g * s.window);
    op.elements = u(s.n * s.c_out * s.out_positions);
  } else {
    op.m = u(cout_g);
    op.n = u(cin_g * s.window);
    op.k = u(s.n * s.out_positions);
    op.elements = u(s.n * s.c_in * s.in_positions);
  }
  return op;
}

// Makes `sizes` and launches `op` named `aten` (nothing for an empty problem).
Tensor launch_conv(const OpDesc& op, IntArrayRef sizes, ScalarType dtype, Device device, std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, sizes, dtype, device, aten);
  detail::dispatch(ctx, op, aten, device, op.m == 0 || op.n == 0 || op.k == 0);
  return out;
}

// The bias's gradient: the output's gradient summed over every dim but the channels.
Tensor channel_sum(const Tensor& grad, std::int64_t channels, std::string_view aten) {
  const std::int64_t c[1] = {channels};
  return detail::reduction(grad.numel(), grad.dtype(), grad.device(), IntArrayRef(c, 1), aten);
}

std::tuple<Tensor, Tensor, Tensor> conv_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                 const ConvShape& s, std::array<bool, 3> mask, bool transposed) {
  const auto& x = impl_of(input);
  Tensor dx, dw, db;
  if (mask[0]) {
    dx = launch_conv(conv_op(transposed ? OpKind::conv : OpKind::conv_dgrad, s, x.dtype), x.sizes, x.dtype, x.device,
                     "aten::convolution_backward");
  }
  if (mask[1]) {
    dw = launch_conv(conv_op(OpKind::conv_wgrad, s, x.dtype), weight.sizes(), weight.dtype(), x.device,
                     "aten::convolution_backward");
  }
  if (mask[2]) db = channel_sum(grad, transposed ? s.c_in : s.c_out, "aten::convolution_backward");
  return {dx, dw, db};
}

}  // namespace

Tensor convolution(const Tensor& input_arg, const Tensor& weight_arg, const Tensor& bias_arg, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   std::int64_t groups) {
  if (!transposed) {
    for (std::int64_t p : output_padding) {
      if (p != 0) detail::fail("convolution: output_padding is for transposed convolutions, got {}", p);
    }
  }
  Tensor input_cast, weight_cast, bias_cast;
  const Tensor& input = detail::autocast_lower(input_arg, input_cast);
  const Tensor& weight = detail::autocast_lower(weight_arg, weight_cast);
  const Tensor& bias = bias_arg.defined() ? detail::autocast_lower(bias_arg, bias_cast) : bias_arg;
  const ConvShape s = conv_shape(input, weight, stride, padding, dilation, groups, transposed, output_padding);
  const auto& x = impl_of(input);
  const std::int64_t channels = transposed ? s.c_in : s.c_out;
  if (bias.defined() && (impl_of(bias).numel != channels || impl_of(bias).sizes.size() != 1)) {
    detail::fail("convolution: expected bias of shape [{}], got {}", channels, format_sizes(impl_of(bias).sizes));
  }
  detail::Sizes out_sizes{s.n, channels};
  const detail::Sizes& spatial = transposed ? s.in : s.out;
  out_sizes.insert(out_sizes.end(), spatial.begin(), spatial.end());
  Tensor out = launch_conv(conv_op(transposed ? OpKind::conv_dgrad : OpKind::conv, s, x.dtype), out_sizes, x.dtype,
                           x.device, "aten::convolution");
  if (bias.defined()) {  // cuDNN's path adds the bias after the convolution, in place
    const std::int64_t numel = impl_of(out).numel;
    detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::add, numel, x.dtype), "aten::add_",
                     x.device, numel == 0);
  }
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    const bool has_bias = bias.defined();
    autograd::record("ConvolutionBackward0", {&input, &weight, &bias}, {&out}, {input, weight},
                     [s, has_bias, transposed](Grads& g, Grads& saved, const autograd::Node& nd) {
                       auto [dx, dw, db] = conv_backward(g[0], saved[0], saved[1], s,
                                                         {nd.needs_input_grad(0), nd.needs_input_grad(1),
                                                          has_bias && nd.needs_input_grad(2)},
                                                         transposed);
                       return Grads{dx, dw, db};
                     });
  }
  return out;
}

namespace nn::functional {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, std::int64_t groups) {
  if (input.defined() && input.dim() != 3) detail::fail("conv1d: expected a 3-D input [N, C, L], got {}D", input.dim());
  return convolution(input, weight, bias, stride, padding, dilation, false, {}, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, std::int64_t groups) {
  if (input.defined() && input.dim() != 4) {
    detail::fail("conv2d: expected a 4-D input [N, C, H, W], got {}D", input.dim());
  }
  return convolution(input, weight, bias, stride, padding, dilation, false, {}, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, std::int64_t groups) {
  if (input.defined() && input.dim() != 5) {
    detail::fail("conv3d: expected a 5-D input [N, C, D, H, W], got {}D", input.dim());
  }
  return convolution(input, weight, bias, stride, padding, dilation, false, {}, groups);
}

}  // namespace nn::functional

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) {
  detail::check_defined(input, "batch_norm", "input");
  detail::check_real(input, "batch_norm", "input");
  const auto& x = impl_of(input);
  if (x.sizes.size() < 2) detail::fail("batch_norm: expected a 2-D or larger input [N, C, *], got {}", format_sizes(x.sizes));
  const std::int64_t channels = x.sizes[1];
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) {
    if (t->defined() && impl_of(*t).numel != channels) {
      detail::fail("batch_norm: expected per-channel tensors of {} values, got {}", channels,
                   format_sizes(impl_of(*t).sizes));
    }
  }
  if (!training && !(running_mean.defined() && running_var.defined())) {
    detail::fail("batch_norm: running_mean and running_var must be defined in evaluation mode");
  }
  if (momentum < 0 || eps <= 0) detail::fail("batch_norm: momentum {} and eps {} must be non-negative and positive", momentum, eps);
  runtime::RankContext* ctx = runtime::current_rank();
  if (training) {  // the batch's mean and variance, one reduction over every element
    const std::int64_t c[1] = {2 * channels};
    (void)detail::reduction(x.numel, ScalarType::Float, x.device, IntArrayRef(c, 1), "aten::native_batch_norm");
  }
  Tensor out = detail::make_tensor(ctx, x.sizes, x.dtype, x.device, "aten::native_batch_norm");
  detail::dispatch(ctx, detail::elementwise_op(OpKind::batchnorm, x.numel, x.dtype), "aten::native_batch_norm",
                   x.device, x.numel == 0);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    const bool has_weight = weight.defined(), has_bias = bias.defined();
    autograd::record("NativeBatchNormBackward0", {&input, &weight, &bias}, {&out}, {input, weight},
                     [has_weight, has_bias](Grads& g, Grads& saved, const autograd::Node& nd) {
                       auto [dx, dw, db] = aten::native_batch_norm_backward(
                           g[0], saved[0], saved[1],
                           {nd.needs_input_grad(0), has_weight && nd.needs_input_grad(1),
                            has_bias && nd.needs_input_grad(2)});
                       return Grads{dx, dw, db};
                     });
  }
  return out;
}

namespace aten {

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool transposed, IntArrayRef output_padding,
                                                        std::int64_t groups, std::array<bool, 3> output_mask) {
  detail::check_defined(grad, "convolution_backward", "grad_output");
  const ConvShape s = conv_shape(input, weight, stride, padding, dilation, groups, transposed, output_padding);
  return conv_backward(grad, input, weight, s, output_mask, transposed);
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(const Tensor& grad, const Tensor& input,
                                                              const Tensor& weight, std::array<bool, 3> output_mask) {
  detail::check_defined(grad, "native_batch_norm_backward", "grad_out");
  detail::check_defined(input, "native_batch_norm_backward", "input");
  const auto& x = impl_of(input);
  const std::int64_t channels = x.sizes.size() >= 2 ? x.sizes[1] : 1;
  runtime::RankContext* ctx = runtime::current_rank();
  // The per-channel sums of dy and dy * x-hat (the weight's and bias's gradients), one reduction.
  const std::int64_t c[1] = {channels};
  Tensor dw = detail::reduction(2 * x.numel, ScalarType::Float, x.device, IntArrayRef(c, 1),
                                "aten::native_batch_norm_backward");
  Tensor db = output_mask[2] ? detail::make_tensor(ctx, IntArrayRef(c, 1), x.dtype, x.device,
                                                   "aten::native_batch_norm_backward")
                             : Tensor();
  Tensor dx;
  if (output_mask[0]) {
    dx = detail::make_tensor(ctx, x.sizes, x.dtype, x.device, "aten::native_batch_norm_backward");
    detail::dispatch(ctx, detail::elementwise_op(OpKind::batchnorm_backward, x.numel, x.dtype),
                     "aten::native_batch_norm_backward", x.device, x.numel == 0);
  }
  return {dx, output_mask[1] && weight.defined() ? dw : Tensor(), db};
}

}  // namespace aten

}  // namespace syntorch::torch
