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

// The largest routing skew accepted (beyond it every share but the first underflows).
inline constexpr double kMaxExpertSkew = 16;

// Rows each expert receives when `tokens` tokens each choose top_k of `experts`: expert e's share
// is proportional to (e + 1)^-skew (a Zipf law: skew 0 is perfectly balanced; the lowest-numbered
// experts are the hot ones, so under expert parallelism the first ranks carry the load), no
// expert receives more than `tokens` (a token picks distinct experts), and the rows are whole
// numbers summing to tokens x top_k (largest remainders, ties to the lower expert). Balanced
// routing of few tokens touches as many experts as it can (top_k x tokens of them): an upper
// bound on the experts a small decode batch reads, where random routing would repeat some.
std::vector<std::int64_t> expert_loads(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, double skew);

// How the tokens of several ranks (tokens_per_rank) are routed together: expert e's rows are
// expert_loads() over all the tokens, dealt to the tokens in turn (the slots of expert e follow
// those of e - 1 around the tokens, so a token's top_k slots go to distinct experts), and a rank
// sends what its tokens were dealt.
class Routing {
 public:
  Routing(const std::vector<std::int64_t>& tokens_per_rank, std::int64_t experts, std::int64_t top_k, double skew);
  // Rows rank `rank`'s tokens send to expert `expert`.
  std::int64_t rows(std::size_t rank, std::int64_t expert) const {
    return rows_[rank * static_cast<std::size_t>(experts_) + static_cast<std::size_t>(expert)];
  }
  // Rows expert `expert` receives from all ranks.
  std::int64_t expert_rows(std::int64_t expert) const { return loads_[static_cast<std::size_t>(expert)]; }

 private:
  std::int64_t experts_;
  std::vector<std::int64_t> loads_;
  std::vector<std::int64_t> rows_;  // ranks x experts
};

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
  // ep = 1: x [tokens, hidden] holds all the TP group's tokens (the output is summed over it).
  torch::Tensor forward(const torch::Tensor& x);
  // ep > 1: x holds this rank's tokens, and tokens_per_rank says how many every rank of the TP
  // group holds (x.size(0) at this rank's position), so that each rank knows what every peer
  // sends and receives.
  torch::Tensor forward(const torch::Tensor& x, const std::vector<std::int64_t>& tokens_per_rank);

 private:
  torch::Tensor route(const torch::Tensor& x, torch::Tensor& weights);  // gate, top-k, permutation
  torch::Tensor experts(const torch::Tensor& rows, const std::vector<std::int64_t>& group_rows);

  MoeOptions options_;
  std::int64_t local_experts_ = 0, first_expert_ = 0;
  torch::Tensor router_;    // [experts, hidden], replicated (kept in the activations' dtype)
  torch::Tensor gate_up_;   // [local experts, 2 x ffn / split, hidden]
  torch::Tensor down_;      // [local experts, hidden, ffn / split]
};
TORCH_MODULE(MoeMlp);

}  // namespace syntorch::models
