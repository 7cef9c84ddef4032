#pragma once
// Kernels outside PyTorch's own API that inference engines launch from their model code (vLLM's
// torch.ops._C, TensorRT-LLM's plugins): how a model asks for one fused kernel where PyTorch
// would run several. The KernelPolicy may still run them as their unfused compositions
// (swiglu=unfused, rope=eager).

#include <cstdint>

#include "syntorch/torch/tensor.hpp"

namespace syntorch::torch::fused {

// x [..., 2 x d] holding the gate and up projections side by side -> silu(gate) * up [..., d]
// (vLLM's silu_and_mul): one swiglu op.
Tensor silu_and_mul(const Tensor& x);

// Rotary position embedding, in place: query [..., heads, head_dim] and key [..., kv_heads,
// head_dim] with the same leading dims (the tokens), the first rotary_dim dims of each head
// rotated by their token's position (vLLM's rotary_embedding): one rope op.
void rotary_embedding_(const Tensor& query, const Tensor& key, std::int64_t rotary_dim);

}  // namespace syntorch::torch::fused
