#pragma once
// Megatron's vocabulary-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py):
// the loss of each token from the logits of this rank's share of the vocabulary, without
// gathering them. The logits are cast to fp32; three all-reduces over the TP group of one fp32
// value a token (the row maximum, the sum of exponentials, the target's logit) combine the
// shares; the softmax is kept (in place of the exponentials) for the backward, which subtracts
// one at each target and scales by the loss's gradient.

#include "syntorch/torch/tensor.hpp"

namespace syntorch::parallel {

// logits [..., vocab / tp] (a column-parallel head without gather), target [...] (Long) ->
// per-token losses [...] in fp32.
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target);

}  // namespace syntorch::parallel
