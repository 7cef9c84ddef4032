// Pooling, resampling and group norm: memory-bound passes over [N, C, *spatial] (and a row-wise
// norm), with their backward, as PyTorch's CUDA kernels run them.
#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch {

using detail::Grads;
using detail::impl_of;

namespace {

// The spatial dims a pooling of `dims` dims reads, checked: input [N, C, *spatial] or [C, *spatial].
void check_spatial(const Tensor& input, std::size_t dims, const char* op) {
  detail::check_defined(input, op, "input");
  detail::check_real(input, op, "input");
  const std::size_t n = impl_of(input).sizes.size();
  if (dims < 1 || dims > 3 || n < dims + 1 || n > dims + 2) {
    detail::fail("{}: expected a {}-D or {}-D input for {} spatial dims, got {}", op, dims + 1, dims + 2, dims,
                 format_sizes(impl_of(input).sizes));
  }
}

// detail::per_dim, with `fallback` standing for an empty `v` (a stride defaulting to the kernel).
detail::Sizes values(IntArrayRef v, std::size_t dims, IntArrayRef fallback, const char* op, const char* what,
                     std::int64_t floor) {
  return detail::per_dim(v.empty() ? fallback : v, dims, op, what, floor);
}

// One memory-bound pass named `name` making an output of `sizes` from `input` (and `extra` read
// alongside), with a backward pass writing the input's gradient from the output's.
Tensor pass_with_backward(const Tensor& input, const detail::Sizes& sizes, const char* name, const char* backward,
                          const char* node, bool indices) {
  const auto& x = impl_of(input);
  aten::OutputSpec specs[2] = {{sizes, x.dtype}, {sizes, ScalarType::Long}};
  // Max pooling writes its argmax indices whether or not a backward follows, as PyTorch's CUDA
  // kernel (max_pool2d_with_indices) does.
  const bool keep_indices = indices;
  std::vector<Tensor> made =
      aten::memory_bound(name, std::span<const Tensor>(&input, 1), std::span(specs, keep_indices ? 2 : 1));
  Tensor out = made[0];
  if (autograd::any_requires_grad({&input})) {
    detail::Sizes in = x.sizes;
    const ScalarType dtype = x.dtype;
    Tensor saved = keep_indices ? made[1] : Tensor();
    autograd::record(node, {&input}, {&out}, {saved}, [in, dtype, backward](Grads& g, Grads& s, const autograd::Node&) {
      std::vector<Tensor> reads;
      reads.reserve(2);
      reads.push_back(g[0]);
      if (s[0].defined()) reads.push_back(s[0]);
      const aten::OutputSpec spec{in, dtype};
      return Grads{aten::memory_bound(backward, reads, std::span<const aten::OutputSpec>(&spec, 1))[0]};
    });
  }
  return out;
}

detail::Sizes pooled_sizes(const Tensor& input, const detail::Sizes& kernel, const detail::Sizes& stride,
                           const detail::Sizes& padding, const detail::Sizes& dilation, bool ceil_mode, const char* op) {
  const auto& x = impl_of(input);
  const std::size_t dims = kernel.size();
  detail::Sizes out(x.sizes.begin(), x.sizes.end() - static_cast<std::ptrdiff_t>(dims));
  for (std::size_t i = 0; i < dims; ++i) {
    const std::int64_t size = x.sizes[x.sizes.size() - dims + i];
    if (padding[i] * 2 > kernel[i]) {
      detail::fail("{}: pad should be at most half of effective kernel size, but got pad={}, kernel_size={}", op,
                   padding[i], kernel[i]);
    }
    const std::int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    const std::int64_t room = size + 2 * padding[i] - span;
    if (room < 0) detail::fail("{}: the kernel ({}) is larger than the padded input ({})", op, span, size + 2 * padding[i]);
    std::int64_t o = (room + (ceil_mode ? stride[i] - 1 : 0)) / stride[i] + 1;
    if (ceil_mode && (o - 1) * stride[i] >= size + padding[i]) --o;  // the last window starts inside
    out.push_back(o);
  }
  return out;
}

}  // namespace

Tensor max_pool(const Tensor& input, IntArrayRef kernel_arg, IntArrayRef stride_arg, IntArrayRef padding_arg,
                IntArrayRef dilation_arg, bool ceil_mode) {
  const std::size_t dims = kernel_arg.size();
  check_spatial(input, dims, "max_pool");
  const detail::Sizes kernel = values(kernel_arg, dims, kernel_arg, "max_pool", "kernel_size", 1);
  const detail::Sizes stride = values(stride_arg, dims, kernel_arg, "max_pool", "stride", 1);
  const detail::Sizes padding = values(padding_arg, dims, {}, "max_pool", "padding", 0);
  const detail::Sizes dilation = values(dilation_arg, dims, {}, "max_pool", "dilation", 1);
  const detail::Sizes out = pooled_sizes(input, kernel, stride, padding, dilation, ceil_mode, "max_pool");
  const char* name = dims == 1 ? "aten::max_pool1d" : dims == 2 ? "aten::max_pool2d_with_indices" : "aten::max_pool3d_with_indices";
  return pass_with_backward(input, out, name,
                            dims == 3 ? "aten::max_pool3d_with_indices_backward" : "aten::max_pool2d_with_indices_backward",
                            "MaxPoolWithIndicesBackward0", true);
}

Tensor avg_pool(const Tensor& input, IntArrayRef kernel_arg, IntArrayRef stride_arg, IntArrayRef padding_arg,
                bool ceil_mode) {
  const std::size_t dims = kernel_arg.size();
  check_spatial(input, dims, "avg_pool");
  const detail::Sizes kernel = values(kernel_arg, dims, kernel_arg, "avg_pool", "kernel_size", 1);
  const detail::Sizes stride = values(stride_arg, dims, kernel_arg, "avg_pool", "stride", 1);
  const detail::Sizes padding = values(padding_arg, dims, {}, "avg_pool", "padding", 0);
  const detail::Sizes out = pooled_sizes(input, kernel, stride, padding, detail::Sizes(dims, 1), ceil_mode, "avg_pool");
  const char* name = dims == 1 ? "aten::avg_pool1d" : dims == 2 ? "aten::avg_pool2d" : "aten::avg_pool3d";
  return pass_with_backward(input, out, name, dims == 3 ? "aten::avg_pool3d_backward" : "aten::avg_pool2d_backward",
                            "AvgPoolBackward0", false);
}

Tensor adaptive_avg_pool(const Tensor& input, IntArrayRef output_size) {
  const std::size_t dims = output_size.size();
  check_spatial(input, dims, "adaptive_avg_pool");
  detail::Sizes out(impl_of(input).sizes.begin(), impl_of(input).sizes.end() - static_cast<std::ptrdiff_t>(dims));
  bool global = true;
  for (std::int64_t o : output_size) {
    if (o < 1) detail::fail("adaptive_avg_pool: output_size must be positive, got {}", format_sizes(output_size));
    out.push_back(o);
    global = global && o == 1;
  }
  if (global) {  // to one value a channel: a mean over the spatial dims, as PyTorch runs it
    detail::Sizes spatial;
    const auto n = static_cast<std::int64_t>(impl_of(input).sizes.size());
    for (std::size_t i = 0; i < dims; ++i) spatial.push_back(n - static_cast<std::int64_t>(dims) + static_cast<std::int64_t>(i));
    return mean(input, spatial, true);
  }
  return pass_with_backward(input, out, dims == 3 ? "aten::_adaptive_avg_pool3d" : "aten::_adaptive_avg_pool2d",
                            dims == 3 ? "aten::_adaptive_avg_pool3d_backward" : "aten::_adaptive_avg_pool2d_backward",
                            "AdaptiveAvgPoolBackward0", false);
}

Tensor upsample(const Tensor& input, IntArrayRef size, std::string_view mode) {
  const std::size_t dims = size.size();
  check_spatial(input, dims, "upsample");
  const bool nearest = mode == "nearest";
  if (!nearest && mode != "bilinear" && mode != "linear" && mode != "trilinear") {
    detail::fail("upsample: mode '{}' is not supported (nearest, linear, bilinear, trilinear)", mode);
  }
  detail::Sizes out(impl_of(input).sizes.begin(), impl_of(input).sizes.end() - static_cast<std::ptrdiff_t>(dims));
  for (std::int64_t o : size) {
    if (o < 1) detail::fail("upsample: the output size must be positive, got {}", format_sizes(size));
    out.push_back(o);
  }
  return pass_with_backward(input, out, nearest ? "aten::upsample_nearest2d" : "aten::upsample_bilinear2d",
                            nearest ? "aten::upsample_nearest2d_backward" : "aten::upsample_bilinear2d_backward",
                            "UpsampleBackward0", false);
}

Tensor group_norm(const Tensor& input, std::int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  detail::check_defined(input, "group_norm", "input");
  const auto& x = impl_of(input);
  if (x.sizes.size() < 2) detail::fail("group_norm: expected an input [N, C, *], got {}", format_sizes(x.sizes));
  const std::int64_t channels = x.sizes[1];
  if (groups < 1 || channels % groups != 0) {
    detail::fail("group_norm: Expected number of channels in input to be divisible by num_groups, but got input of "
                 "shape {} and num_groups={}",
                 format_sizes(x.sizes), groups);
  }
  // As a layer norm over [N x groups, C / groups x spatial]: the same row-wise kernels.
  const std::int64_t rows[2] = {x.sizes[0] * groups, x.numel / std::max<std::int64_t>(1, x.sizes[0] * groups)};
  Tensor flat = input.reshape(IntArrayRef(rows, 2));
  Tensor y = layer_norm(flat, IntArrayRef(rows + 1, 1), {}, {}, eps).reshape(x.sizes);
  // The per-channel affine as a broadcast multiply and add (PyTorch fuses them into its kernel).
  detail::Sizes per_channel(x.sizes.size(), 1);
  per_channel[1] = channels;
  for (const Tensor* t : {&weight, &bias}) {
    if (t->defined() && impl_of(*t).numel != channels) {
      detail::fail("group_norm: expected weight and bias of {} values, got {}", channels, format_sizes(impl_of(*t).sizes));
    }
  }
  if (weight.defined()) y = y * weight.reshape(per_channel);
  if (bias.defined()) y = y + bias.reshape(per_channel);
  return y;
}

}  // namespace syntorch::torch
