// Fused attention (PyTorch's scaled_dot_product kernels) and its backward.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace attention_ops {

// The output, then the statistics the same kernel writes (logsumexp, seeds) as fresh tensors.
Lowered sdpa(const Call& c) {
  const torch::Tensor mask = c.has("attn_bias") ? c.optional_tensor("attn_bias") : c.optional_tensor("attn_mask");
  std::vector<torch::Tensor> out{torch::scaled_dot_product_attention(
      c.tensor("query"), c.tensor("key"), c.tensor("value"), mask, c.real("dropout_p", 0.0),
      c.boolean("is_causal", false))};
  for (std::size_t i = 1; i < c.output_count(); ++i) out.push_back(c.fresh(i));
  return out;
}

Lowered sdpa_backward(const Call& c) {
  auto [dq, dk, dv] = torch::aten::attention_backward(c.tensor("grad_out"), c.tensor("query"), c.tensor("key"),
                                                      c.tensor("value"), c.boolean("is_causal", false),
                                                      c.real("dropout_p", 0.0) > 0);
  std::vector<torch::Tensor> out{dq, dk, dv};
  for (std::size_t i = 3; i < c.output_count(); ++i) out.push_back(c.fresh(i));
  return out;
}

// scaled_dot_product_attention itself, as a program calls it (graphs the torch layer exported).
Lowered sdpa_composite(const Call& c) {
  std::optional<double> scale;
  if (c.has("scale")) scale = c.real("scale");
  return std::vector{torch::scaled_dot_product_attention(c.tensor("query"), c.tensor("key"), c.tensor("value"),
                                                         c.optional_tensor("attn_mask"), c.real("dropout_p", 0.0),
                                                         c.boolean("is_causal", false), scale,
                                                         c.boolean("enable_gqa", false))};
}

// Positional arguments as ATen's native_functions.yaml declares each overload.
constexpr Lowering kTable[] = {
    {"scaled_dot_product_attention", "query key value attn_mask dropout_p is_causal", sdpa_composite},
    {"_scaled_dot_product_flash_attention", "query key value dropout_p is_causal return_debug_mask", sdpa},
    {"_scaled_dot_product_efficient_attention", "query key value attn_bias compute_log_sumexp dropout_p is_causal",
     sdpa},
    {"_scaled_dot_product_cudnn_attention",
     "query key value attn_bias compute_log_sumexp dropout_p is_causal return_debug_mask", sdpa},
    {"_scaled_dot_product_attention_math", "query key value attn_mask dropout_p is_causal dropout_mask", sdpa},
    {"_scaled_dot_product_flash_attention_for_cpu", "query key value dropout_p is_causal", sdpa},
    {"_scaled_dot_product_flash_attention_backward",
     "grad_out query key value out logsumexp cum_seq_q cum_seq_k max_q max_k dropout_p is_causal philox_seed "
     "philox_offset",
     sdpa_backward},
    {"_scaled_dot_product_efficient_attention_backward",
     "grad_out query key value attn_bias out logsumexp philox_seed philox_offset dropout_p grad_input_mask is_causal",
     sdpa_backward},
    {"_scaled_dot_product_cudnn_attention_backward",
     "grad_out query key value out logsumexp philox_seed philox_offset attn_bias cum_seq_q cum_seq_k max_q max_k "
     "dropout_p is_causal",
     sdpa_backward},
    {"_scaled_dot_product_flash_attention_for_cpu_backward", "grad_out query key value out logsumexp dropout_p is_causal",
     sdpa_backward},
};

}  // namespace attention_ops

std::span<const Lowering> attention() { return attention_ops::kTable; }

}  // namespace syntorch::graph::lowerings
