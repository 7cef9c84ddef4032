#pragma once
// Kernels outside PyTorch's own API that inference engines launch from their model code (vLLM's
// torch.ops._C, TensorRT-LLM's plugins): how a model asks for one fused kernel where PyTorch
// would run several. The KernelPolicy may still run them as their unfused compositions
// (swiglu=unfused, rope=eager).

#include <cstdint>
#include <tuple>
#include <vector>

#include "syntorch/torch/tensor.hpp"

namespace syntorch::torch::fused {

// x [..., 2 x d] holding the gate and up projections side by side -> silu(gate) * up [..., d]
// (vLLM's silu_and_mul): one swiglu op.
Tensor silu_and_mul(const Tensor& x);

// Rotary position embedding, in place: query [..., heads, head_dim] and key [..., kv_heads,
// head_dim] with the same leading dims (the tokens), the first rotary_dim dims of each head
// rotated by their token's position (vLLM's rotary_embedding): one rope op. Under autograd the
// handles take on the rotation's history; its backward rotates the gradients back (one rope op).
void rotary_embedding_(Tensor& query, Tensor& key, std::int64_t rotary_dim);

// --- Serving (vLLM's attention backends, FlashAttention's varlen kernels) ---
// Attention over a packed batch: query [tokens, heads, head_dim] holds the new tokens of several
// sequences one after the other, query_lens[i] of sequence i, whose keys and values are already
// in the KV pool key_cache, value_cache [pages, page_tokens, kv_heads, head_dim] (vLLM's layout);
// each new token attends causally to its sequence's context_lens[i] tokens (cached and new), each
// sequence's context within the pool (sequences may share pages).
// -> [tokens, heads, head_dim]: one paged_attention op. The lengths are what a real kernel reads
// from device tensors (cu_seqlens, seq_lens, the block table); with meta tensors the caller says
// them. No backward (inference only).
Tensor paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                       const std::vector<std::int64_t>& query_lens, const std::vector<std::int64_t>& context_lens);

// --- Mixture of experts (vLLM's fused_moe pieces, TensorRT-LLM's MoE plugin) ---
// Routing: gating_output [tokens, experts] -> (weights [tokens, k] float32, expert ids
// [tokens, k] int32), the softmax and the top k in one kernel (vLLM's topk_softmax): one topk op.
std::tuple<Tensor, Tensor> topk_softmax(const Tensor& gating_output, std::int64_t k);
// hidden [tokens, dim] and expert_ids [tokens, k] -> [tokens x k, dim], each token's row copied
// to its k expert slots, grouped by expert: one moe_permute op.
Tensor moe_permute(const Tensor& hidden, const Tensor& expert_ids);
// expert_output [tokens x k, dim] and routing weights [tokens, k] -> [tokens, dim], each token's
// k rows weighted and summed: one moe_unpermute op.
Tensor moe_unpermute(const Tensor& expert_output, const Tensor& routing_weights);
// input [rows, in] whose rows come grouped, group_rows[g] of them for group g, and weight
// [groups, out, in] -> [rows, out], each group's rows times its weight transposed (as linear):
// one grouped_gemm op. group_rows is what a real kernel reads from a device tensor of offsets
// (torch._grouped_mm's offs); with meta tensors the caller says it. An fp8 weight under
// fp8::AutocastGuard quantises the input first, as linear does.
Tensor grouped_mm(const Tensor& input, const Tensor& weight, const std::vector<std::int64_t>& group_rows);

}  // namespace syntorch::torch::fused
