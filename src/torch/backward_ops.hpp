#pragma once
// The kernels of backward passes that have no forward counterpart in the torch API, each named as
// ATen names it (aten::gelu_backward, aten::native_layer_norm_backward, ...): called by the
// autograd nodes (derivatives.cpp) with grad mode off.

#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>

#include "syntorch/runtime/op.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::detail {

// dy and a saved tensor of dy's shape -> dx (gelu, silu, relu, tanh, sigmoid backward kinds).
Tensor elementwise_backward(runtime::OpKind kind, const Tensor& grad, const Tensor& saved, std::string_view aten);
// softmax (and log_softmax) backward along dim from the saved output -> dx in `dtype`.
Tensor softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim, ScalarType dtype,
                        std::string_view aten);
// A norm's backward over the last `normalized` elements: dx, and the weight and bias gradients
// when they are defined (bias only for layernorm), each only where `output_mask` asks for it
// (ATen's output_mask: a frozen weight gets none). The kernel is costed whole either way.
std::tuple<Tensor, Tensor, Tensor> norm_backward(runtime::OpKind kind, const Tensor& grad, const Tensor& input,
                                                 const Tensor& weight, const Tensor& bias, std::int64_t normalized,
                                                 std::array<bool, 3> output_mask, std::string_view aten);
// FlashAttention's backward: dq, dk, dv shaped as q, k, v (dropout: the forward's mask drawn again;
// sdp_backends: the forward's OpDesc::sdp_backends, which its backward follows).
std::tuple<Tensor, Tensor, Tensor> attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                      const Tensor& v, bool causal, bool dropout,
                                                      std::uint8_t sdp_backends);
// The dense gradient of an embedding table of `vocab` rows from the gradients of its lookups.
Tensor embedding_backward(const Tensor& grad, std::int64_t vocab);
// silu(gate) * up's backward: d[gate, up] shaped as the fused input.
Tensor swiglu_backward(const Tensor& grad, const Tensor& input);
// nll_loss's backward for [N, C] log-probabilities: a zeroed gradient of `input_sizes`, then
// each row's -grad/N scattered into its target's column (one small kernel over the N rows).
Tensor nll_loss_backward(const Tensor& grad, IntArrayRef input_sizes);
// Sums `grad` down to `sizes` over the dims broadcasting added or expanded (itself when equal).
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);
// One `sum` kernel reading `inputs` elements of `dtype` into a new tensor of `out_sizes` (each
// output the sum of inputs / its numel of them): what sum, mean, sum_to and nll_loss launch.
Tensor reduction(std::int64_t inputs, ScalarType dtype, Device device, IntArrayRef out_sizes, std::string_view aten);

}  // namespace syntorch::torch::detail
