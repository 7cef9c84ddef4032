#pragma once
// A mixture-of-experts MLP (Shazeer et al., 2017; Mixtral, Jiang et al., 2024): a router picks
// top_k of `experts` SwiGLU experts for each token, whose outputs are summed with the routing
// weights. Run as the serving engines run it: a gate GEMM, one fused softmax + top-k, the tokens
// permuted into expert order, a grouped GEMM over the experts for the gate/up projections, SwiGLU,
// a grouped GEMM for the down projection, and the weighted combine. Written only against the
// torch and parallel API.
//
// Parallelism (the current parallel state): with ep = 1 every rank holds every expert, each
// split over the TP group like a dense MLP (vLLM's and TensorRT-LLM's TP MoE), and an all-reduce
// sums the partial outputs. With ep > 1 each rank takes its share of the tokens (the block splits
// them over the TP group), the experts are spread over the ep group (experts / ep each, split
// over etp = tp / ep ranks), and an all-to-all sends each token to the ranks of its experts and
// another brings the results back (Megatron-Core's all-to-all token dispatcher; DeepSpeed-MoE).
//
// Routing is data-dependent on real hardware; here it is a parameter: the tokens each expert
// receives follow expert_loads() (balanced by default, or skewed).

#include <cstdint>
#include <vector>

#include "syntorch/torch/module.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::models {

// Rows each expert receives when `tokens` tokens each choose top_k of `experts`: expert e's share
// is proportional to (e + 1)^-skew (a Zipf law: skew 0 is perfectly balanced; the lowest-numbered
// experts are the hot ones, so under expert parallelism the first ranks carry the load), no
// expert receives more than `tokens` (a token picks distinct experts), and the rows are whole
// numbers summing to tokens x top_k (largest remainders, ties to the lower expert).
std::vector<std::int64_t> expert_loads(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, double skew);

struct MoeOptions {
  std::int64_t hidden = 0;
  std::int64_t ffn = 0;      // each expert's SwiGLU width
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  double skew = 0;           // expert_loads()
};

class MoeMlpImpl : public torch::nn::Module {
 public:
  explicit MoeMlpImpl(const MoeOptions& options);
  // x [tokens, hidden]: with ep = 1 all the TP group's tokens (the output is summed over it);
  // with ep > 1 this rank's share of them.
  torch::Tensor forward(const torch::Tensor& x);

 private:
  MoeOptions options_;
  std::int64_t local_experts_ = 0, first_expert_ = 0;
  torch::Tensor router_;    // [experts, hidden], replicated (kept in the activations' dtype)
  torch::Tensor gate_up_;   // [local experts, 2 x ffn / split, hidden]
  torch::Tensor down_;      // [local experts, hidden, ffn / split]
};
TORCH_MODULE(MoeMlp);

}  // namespace syntorch::models
