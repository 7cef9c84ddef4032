#pragma once
// ATen's own ops, below autograd and by their ATen names, for programs that arrive as ATen calls
// (the bridge from real PyTorch, imported graphs). Each launches what the torch layer's autograd
// launches for the same op, so a program costs the same whichever way it came in; `memory_bound`
// is the generic cost for an op the torch layer has no model of.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::aten {

// A view of self's memory with this layout (as_strided and every other view op: a host op named
// `name`, no kernel). The offset is in elements from the start of self's memory.
Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, std::int64_t storage_offset,
                  std::string_view name = "aten::as_strided");

// An activation's backward from the gradient and the tensor it saved: gelu_backward,
// silu_backward, threshold_backward (relu), tanh_backward, sigmoid_backward. `forward` names the
// activation ("gelu", "silu", "relu", "tanh", "sigmoid").
Tensor activation_backward(std::string_view forward, const Tensor& grad, const Tensor& saved, std::string_view name);

// _softmax_backward_data and _log_softmax_backward_data: the input's gradient, in `input_dtype`.
Tensor softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim, ScalarType input_dtype,
                        bool log);

// native_layer_norm_backward (rms: an RMSNorm's) over the last `normalized` dims: the input's,
// weight's and bias's gradients where output_mask asks (undefined otherwise).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                              std::int64_t normalized_dims, const Tensor& weight,
                                                              const Tensor& bias, std::array<bool, 3> output_mask,
                                                              bool rms = false);

// A fused attention's backward (_scaled_dot_product_*_attention_backward): dq, dk, dv.
std::tuple<Tensor, Tensor, Tensor> attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                      const Tensor& v, bool causal, bool dropout);

// convolution_backward: the input's, weight's and bias's gradients where output_mask asks
// (conv_dgrad, conv_wgrad, a sum), as the torch layer's convolution backward launches them.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool transposed, IntArrayRef output_padding,
                                                        std::int64_t groups, std::array<bool, 3> output_mask);

// native_batch_norm_backward: the input's, weight's and bias's gradients where output_mask asks.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(const Tensor& grad, const Tensor& input,
                                                              const Tensor& weight, std::array<bool, 3> output_mask);

// nll_loss_backward (mean reduction, class indices): the log-probabilities' gradient, of self's shape.
Tensor nll_loss_backward(const Tensor& grad, const Tensor& self);

// embedding_dense_backward: the table's gradient, num_weights rows.
Tensor embedding_dense_backward(const Tensor& grad, std::int64_t num_weights);

// An activation applied in place (relu_, silu_, gelu_, sigmoid_, tanh_): its elementwise kernel
// reading and writing self, named `name`. `activation` is "relu", "silu", "gelu", "sigmoid" or
// "tanh"; self is returned.
Tensor activation_(std::string_view activation, const Tensor& self, std::string_view name);

// A reduction of self into a new tensor of out_sizes and out_dtype (sum, mean, amax, norm, ...):
// one reduction kernel named `name`.
Tensor reduce(const Tensor& self, IntArrayRef out_sizes, ScalarType out_dtype, std::string_view name);

// An output an op makes: its sizes and dtype (contiguous, on the inputs' device).
struct OutputSpec {
  std::vector<std::int64_t> sizes;
  ScalarType dtype = ScalarType::Float;
};

// The generic cost of an op with no model of its own: one memory-bound kernel named `name` that
// reads every input once, writes every output (made here, returned in order) and writes `written`
// (tensors the op updates in place) once. The device is the first tensor's.
std::vector<Tensor> memory_bound(std::string_view name, std::span<const Tensor> inputs,
                                 std::span<const OutputSpec> outputs, std::span<const Tensor> written = {});

}  // namespace syntorch::torch::aten
