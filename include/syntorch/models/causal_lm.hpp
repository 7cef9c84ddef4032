#pragma once
// What a rank's share of a decoder-only model offers the loops that drive it (session's
// generation and training drivers): the stages a pipeline runs (embedding on the first stage, its
// share of the blocks, the next token or the logits and loss on the last), with a KV cache for
// generation. Written only against the torch and parallel API.

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

// A KV pool for one block as a serving engine pages it (vLLM's layout): keys and values for
// `pages` pages of `page_tokens` positions each, on this rank's key/value heads; a sequence's
// context sits in whichever pages its engine gave it.
struct PagedKVCache {
  torch::Tensor keys;    // [pages, page_tokens, kv_heads/tp, head_dim]
  torch::Tensor values;
};

// One serving step's sequences, packed one after the other (vLLM's attention metadata): sequence
// i brings query_lens[i] new tokens (a prefill chunk, or one decode token) and attends to its
// context_lens[i] positions, those already cached and its new ones.
struct PackedBatch {
  std::vector<std::int64_t> query_lens;
  std::vector<std::int64_t> context_lens;
};

// The attention a rank's share runs in each of its blocks: its query and key/value heads, their
// size, and how many blocks it holds (what a serving engine's cost estimates need).
struct AttentionShape {
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t layers = 0;
};

// A model's share on this rank: what the generation loop and the training iteration call.
class CausalLM : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;

  // ---- generation ----

  virtual std::int64_t hidden_size() const = 0;
  // One KV cache per local block for `batch` sequences of up to `max_seq` positions.
  virtual std::vector<KVCache> make_kv_cache(std::int64_t batch, std::int64_t max_seq) const = 0;
  // First stage: token ids [batch, seq] at positions past.. -> hidden [batch, seq, hidden].
  virtual torch::Tensor embed(const torch::Tensor& tokens, std::int64_t past) = 0;
  // The local blocks; `caches` are views of this micro-batch's rows.
  virtual torch::Tensor blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) = 0;
  // Last stage: the next token of each sequence from the hidden state of its last position.
  virtual torch::Tensor next_token(const torch::Tensor& x) = 0;

  // ---- serving ----

  // One KV pool per local block: `pages` pages of `page_tokens` positions (in the default dtype).
  virtual std::vector<PagedKVCache> make_paged_kv_cache(std::int64_t pages, std::int64_t page_tokens) const = 0;
  virtual AttentionShape attention_shape() const = 0;
  // The KV pool's bytes per token position over this rank's blocks, in `element_bytes` a value.
  virtual double kv_bytes_per_token(double element_bytes) const = 0;
  // The local blocks over a packed batch: x [1, tokens, hidden] (the first stage embeds the token
  // ids [1, tokens] with embed(tokens, 0)); the new keys and values are written to the pools.
  virtual torch::Tensor blocks_packed(torch::Tensor x, std::vector<PagedKVCache>& caches, const PackedBatch& batch) = 0;
  // Last stage: the next token of the `rows` sequences that sample from x [1, tokens, hidden]
  // (each from its last new token, as a serving engine's logits_indices pick them) -> [rows, 1].
  virtual torch::Tensor sample_packed(const torch::Tensor& x, std::int64_t rows) = 0;

  // ---- training ----
  // One pipeline stage's forward over a micro-batch: the first stage takes token ids [batch, seq],
  // the others the previous stage's activations; the last returns this rank's share of the
  // vocabulary's logits, the others their activations
  // [batch, seq, hidden] (seq / tp of it under sequence parallelism).
  virtual torch::Tensor forward_train(const torch::Tensor& input) = 0;
  // The mean loss of the last stage's logits against labels [batch, seq].
  virtual torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& labels) = 0;
};

}  // namespace syntorch::models
