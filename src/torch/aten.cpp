// ATen's own ops by their ATen names (syntorch/torch/aten.hpp): thin entries over the kernels the
// torch layer's autograd launches, and the generic memory-bound cost.
#include "syntorch/torch/aten.hpp"

#include "backward_ops.hpp"
#include "internal.hpp"

namespace syntorch::torch::aten {

using detail::fail;
using detail::impl_of;
using runtime::OpKind;

Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, std::int64_t storage_offset,
                  std::string_view name) {
  detail::check_defined(self, "as_strided", "self");
  if (sizes.size() != strides.size()) {
    fail("{}: mismatch in length of strides and shape ({} and {})", name, strides.size(), sizes.size());
  }
  if (storage_offset < 0) fail("{}: Tensor: invalid storage offset {}", name, storage_offset);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) {
      fail("{}: negative size or stride {} / {} in dim {}", name, sizes[i], strides[i], i);
    }
  }
  detail::host_op(name);
  return detail::make_view(self, sizes, strides, storage_offset);
}

Tensor activation_(std::string_view activation, const Tensor& self, std::string_view name) {
  static constexpr std::pair<std::string_view, OpKind> kinds[] = {{"gelu", OpKind::gelu},
                                                                  {"silu", OpKind::silu},
                                                                  {"relu", OpKind::relu},
                                                                  {"tanh", OpKind::tanh},
                                                                  {"sigmoid", OpKind::sigmoid}};
  detail::check_defined(self, "activation_", "self");
  for (const auto& [fn, kind] : kinds) {
    if (fn != activation) continue;
    const auto& x = impl_of(self);
    detail::dispatch(runtime::current_rank(), detail::elementwise_op(kind, x.numel, x.dtype), name, x.device,
                     x.numel == 0);
    return self;
  }
  fail("activation_: no kernel for activation '{}' (expected relu, silu, gelu, sigmoid or tanh)", activation);
}

Tensor activation_backward(std::string_view forward, const Tensor& grad, const Tensor& saved, std::string_view name) {
  static constexpr std::pair<std::string_view, OpKind> kinds[] = {
      {"gelu", OpKind::gelu_backward}, {"silu", OpKind::silu_backward}, {"relu", OpKind::relu_backward},
      {"tanh", OpKind::tanh_backward}, {"sigmoid", OpKind::sigmoid_backward}};
  detail::check_defined(grad, "activation_backward", "grad_output");
  detail::check_defined(saved, "activation_backward", "self");
  for (const auto& [fwd, kind] : kinds) {
    if (fwd == forward) return detail::elementwise_backward(kind, grad, saved, name);
  }
  fail("activation_backward: no backward kernel for activation '{}' (expected gelu, silu, relu, tanh or sigmoid)",
       forward);
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim, ScalarType input_dtype,
                        bool log) {
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  detail::check_defined(grad, op, "grad_output");
  detail::check_defined(output, op, "output");
  const auto d = detail::wrap_dim(dim, static_cast<std::int64_t>(impl_of(output).sizes.size()), op);
  return detail::softmax_backward(grad, output, d, input_dtype,
                                  log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data");
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                              std::int64_t normalized_dims, const Tensor& weight,
                                                              const Tensor& bias, std::array<bool, 3> output_mask,
                                                              bool rms) {
  detail::check_defined(grad, "native_layer_norm_backward", "grad_out");
  detail::check_defined(input, "native_layer_norm_backward", "input");
  const auto& x = impl_of(input);
  const auto ndim = static_cast<std::int64_t>(x.sizes.size());
  if (normalized_dims < 0 || normalized_dims > ndim) {
    fail("native_layer_norm_backward: normalized_shape of {} dims for an input of {} dims", normalized_dims, ndim);
  }
  const std::int64_t normalized =
      detail::product(IntArrayRef(x.sizes.data() + (ndim - normalized_dims), static_cast<std::size_t>(normalized_dims)));
  return detail::norm_backward(rms ? OpKind::rmsnorm : OpKind::layernorm, grad, input, weight, bias, normalized,
                               output_mask, rms ? "aten::_fused_rms_norm_backward" : "aten::native_layer_norm_backward");
}

std::tuple<Tensor, Tensor, Tensor> attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                      const Tensor& v, bool causal, bool dropout) {
  for (const Tensor* t : {&grad, &q, &k, &v}) {
    detail::check_defined(*t, "attention_backward", "an argument");
    if (impl_of(*t).sizes.size() != 4) {
      fail("attention_backward: expected 4-D [batch, heads, seq, head_dim] tensors, got {}",
           format_sizes(impl_of(*t).sizes));
    }
  }
  return detail::attention_backward(grad, q, k, v, causal, dropout, 0);
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self) {
  detail::check_defined(grad, "nll_loss_backward", "grad_output");
  detail::check_defined(self, "nll_loss_backward", "self");
  return detail::nll_loss_backward(grad, impl_of(self).sizes);
}

Tensor embedding_dense_backward(const Tensor& grad, std::int64_t num_weights) {
  detail::check_defined(grad, "embedding_dense_backward", "grad_output");
  if (num_weights < 0) fail("embedding_dense_backward: num_weights must be non-negative, got {}", num_weights);
  return detail::embedding_backward(grad, num_weights);
}

Tensor reduce(const Tensor& self, IntArrayRef out_sizes, ScalarType out_dtype, std::string_view name) {
  detail::check_defined(self, "reduce", "self");
  return detail::reduction(impl_of(self).numel, out_dtype, self.device(), out_sizes, name);
}

std::vector<Tensor> memory_bound(std::string_view name, std::span<const Tensor> inputs,
                                 std::span<const OutputSpec> outputs, std::span<const Tensor> written) {
  std::uint64_t bytes = 0;
  Device device(DeviceType::CUDA);
  bool have_device = false;
  auto note = [&](const Tensor& t) {
    if (!t.defined()) return;
    bytes += t.nbytes();
    if (!have_device) device = t.device(), have_device = true;
  };
  for (const Tensor& t : inputs) note(t);
  for (const Tensor& t : written) note(t);
  runtime::RankContext* ctx = runtime::current_rank();
  std::vector<Tensor> made;
  made.reserve(outputs.size());
  for (const OutputSpec& spec : outputs) {
    made.push_back(detail::make_tensor(ctx, spec.sizes, spec.dtype, device, name));
    bytes += made.back().nbytes();
  }
  // As a byte copy moving the same traffic: half the bytes read, half written.
  const auto elements = static_cast<std::int64_t>((bytes + 1) / 2);
  detail::dispatch(ctx, detail::elementwise_op(OpKind::copy, elements, ScalarType::Char), name, device, elements == 0);
  return made;
}

}  // namespace syntorch::torch::aten
