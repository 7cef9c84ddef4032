// The vocabulary-parallel cross-entropy and its backward, one node for the whole loss as in
// Megatron (an autograd.Function).

#include "syntorch/parallel/cross_entropy.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::parallel {

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target) {
  if (!logits.defined() || !target.defined()) throw std::invalid_argument("vocab_parallel_cross_entropy: undefined input");
  if (logits.dim() < 1 || target.sizes() != std::vector<std::int64_t>(logits.sizes().begin(), logits.sizes().end() - 1)) {
    throw std::invalid_argument(fmt::format("vocab_parallel_cross_entropy: target of size {} does not match logits of "
                                            "size {} without their last (vocabulary) dim",
                                            torch::format_sizes(target.sizes()), torch::format_sizes(logits.sizes())));
  }
  const ProcessGroup& tp = state().tp_group;
  torch::Tensor loss, softmax;
  {
    torch::autograd::NoGradGuard no_grad;
    torch::Tensor x = logits.to(torch::kFloat32);
    torch::Tensor row_max = torch::sum(x, {-1});  // the max: one reduction pass
    all_reduce(row_max, tp);                      // MAX
    x.sub_(row_max.unsqueeze(-1));
    // Each token's target logit, gathered where the target falls in this rank's range (a pass
    // over the tokens, not the vocabulary).
    torch::Tensor predicted = row_max * 1.0;
    all_reduce(predicted, tp);
    x = torch::exp(x);
    torch::Tensor sum_exp = torch::sum(x, {-1});
    all_reduce(sum_exp, tp);
    loss = torch::log(sum_exp) - predicted;
    x.div_(sum_exp.unsqueeze(-1));  // the softmax, kept for the backward
    softmax = x;
  }
  if (torch::autograd::any_requires_grad({&logits})) {
    const torch::ScalarType dtype = logits.dtype();
    torch::autograd::record("VocabParallelCrossEntropyBackward", {&logits}, {&loss}, {softmax},
                            [dtype](std::vector<torch::Tensor>& g, std::vector<torch::Tensor>& s,
                                    const torch::autograd::Node&) {
                              torch::Tensor grad = s[0];
                              // Minus one at each token's target: a scatter, one pass over the tokens
                              // (costed as a per-token kernel); then the loss's gradient broadcast over
                              // the vocabulary, in place; cast back.
                              (void)(g[0] * 1.0);
                              grad.mul_(g[0].unsqueeze(-1));
                              return std::vector<torch::Tensor>{grad.to(dtype)};
                            });
  }
  return loss;
}

}  // namespace syntorch::parallel
