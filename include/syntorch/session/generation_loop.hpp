#pragma once
// The generation driver: autoregressive decoding on this rank over a model's share, as the
// Megatron and FasterTransformer generation loops run it. A prefill over the prompt (scope
// "prefill"), then one decode step per further token (scopes "decode"), micro-batches flowing
// through the pipeline stages, each step ending when the sampled tokens are on the host. Written
// only against the torch and parallel API, like a user's own loop.

#include <cstdint>
#include <optional>

#include "syntorch/base/dtype.hpp"
#include "syntorch/models/model.hpp"

namespace syntorch::session {

// What one generation asks: the batch and its lengths, pipeline micro-batches, graphs, the KV
// cache's dtype, routing skew, the prefill's token budget.
struct GenerateOptions {
  std::int64_t batch = 1;
  std::int64_t input_tokens = 128;
  std::int64_t output_tokens = 16;  // the first comes from the prefill
  std::int64_t micro_batches = 0;   // pipeline micro-batches; 0 = one per stage
  bool graph = false;               // capture each decode step as one graph launch
  std::optional<DType> kv_cache_dtype;  // the KV cache's dtype (the default dtype when not given)
  double expert_skew = 0;               // mixture of experts: routing imbalance (0: balanced)
  // The most prompt tokens one prefill forward takes (TensorRT-LLM's max_num_tokens, vLLM's
  // max_num_batched_tokens): the prefill runs the batch in groups of sequences within it, each
  // writing its rows of the KV cache, so activations are sized by the group (0: all at once).
  std::int64_t max_num_tokens = 0;
};

// On the current rank (parallel state initialised): builds `model`'s share in eval mode and
// generates. Throws std::invalid_argument for sizes that cannot run.
void generate(const models::Model& model, const GenerateOptions& options);

}  // namespace syntorch::session
