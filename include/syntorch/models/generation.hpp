#pragma once
// Autoregressive generation on one rank, for any decoder-only model that splits into the stages
// a pipeline runs: embedding (first stage), its share of the blocks, and the next token from the
// last hidden state (last stage). Written only against the torch and parallel API.

#include <cstdint>
#include <vector>

#include "syntorch/models/model.hpp"
#include "syntorch/torch/module.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::models {

// A KV cache for one block: keys and values for every sequence position of the batch, on this
// rank's key/value heads.
struct KVCache {
  torch::Tensor keys;    // [batch, kv_heads/tp, max_seq, head_dim]
  torch::Tensor values;
};

// What the generation loop needs of a model's share on this rank.
class CausalLM : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;

  virtual std::int64_t hidden_size() const = 0;
  // One KV cache per local block for `batch` sequences of up to `max_seq` positions.
  virtual std::vector<KVCache> make_kv_cache(std::int64_t batch, std::int64_t max_seq) const = 0;
  // First stage: token ids [batch, seq] at positions past.. -> hidden [batch, seq, hidden].
  virtual torch::Tensor embed(const torch::Tensor& tokens, std::int64_t past) = 0;
  // The local blocks; `caches` are views of this micro-batch's rows.
  virtual torch::Tensor blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) = 0;
  // Last stage: the next token of each sequence from the hidden state of its last position.
  virtual torch::Tensor next_token(const torch::Tensor& x) = 0;
};

// Autoregressive generation on this rank, as the Megatron/FasterTransformer generation loop does:
// a prefill over the prompt (scope "prefill"), then one decode step per further token (scopes
// "decode"), micro-batches flowing through the pipeline stages, each step ending when the
// sampled tokens are on the host.
void generate(CausalLM& model, const GenerateOptions& options);

}  // namespace syntorch::models
