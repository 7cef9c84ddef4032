#pragma once
// A decoder-only transformer in the shapes today's open models share, each choice a field of its
// config: Llama-2/3 and Mistral (RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention
// with the KV cache sized by KV heads, untied head), Qwen2 (the same with q/k/v biases), GPT-J
// (LayerNorm, partial rotary, attention and MLP in parallel off one norm, a biased head) and
// GPT-2 (learned positions, GELU MLP, tied head). Written only against the public torch and
// parallel API: Megatron tensor parallelism inside each block (K/V heads replicated when TP
// exceeds them, as vLLM and Megatron do), pipeline stages over the blocks, generation with a
// per-layer KV cache, training with recomputation and dropout.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/causal_lm.hpp"
#include "syntorch/models/model.hpp"
#include "syntorch/models/moe.hpp"
#include "syntorch/parallel/layers.hpp"
#include "syntorch/torch/modules.hpp"

namespace syntorch::models {

struct TransformerConfig {
  enum class Norm : std::uint8_t { layernorm, rmsnorm };
  enum class Positions : std::uint8_t { rotary, learned };
  enum class Mlp : std::uint8_t { swiglu, gelu };

  std::string name;
  std::string architecture;     // the Hugging Face class it corresponds to ("LlamaForCausalLM")
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;    // = heads for multi-head attention, 1 for multi-query
  std::int64_t head_dim = 0;
  std::int64_t ffn = 0;         // MLP width (SwiGLU: of each of gate and up)
  std::int64_t vocab = 0;
  std::int64_t context = 0;     // positions the model was trained for (max_position_embeddings)
  Norm norm = Norm::rmsnorm;
  Positions positions = Positions::rotary;
  std::int64_t rotary_dim = 0;  // rotated dims of each head (= head_dim unless partial rotary)
  Mlp mlp = Mlp::swiglu;
  bool parallel_block = false;  // attention and MLP off one norm, summed (GPT-J)
  bool qkv_bias = false;
  bool out_bias = false;        // a bias on the attention output projection (GPT-2)
  bool mlp_bias = false;        // biases on the MLP's projections (GPT-J, GPT-2)
  bool head_bias = false;       // a bias on the LM head (GPT-J)
  bool tie_embeddings = false;
  std::int64_t sliding_window = 0;  // attention over at most this many past positions (0: all);
                                    // runs longer than it are refused, as it is not modelled
  std::int64_t experts = 0;            // a mixture-of-experts MLP of this many SwiGLU experts of
                                       // width ffn (0: a dense MLP; Mixtral)
  std::int64_t experts_per_token = 0;  // top-k of the router

  bool moe() const { return experts > 0; }

  // Weights of the whole model (a tied head counted once).
  double parameters() const;
  // One block's matrix weights (no biases or norms): attention's projections, and the MLP of
  // `mlps` experts (1 for a dense model).
  double attention_weights() const;
  double mlp_weights(std::int64_t mlps) const;
  // K/V heads one rank holds at tensor parallel `tp` (replicated when tp exceeds them).
  std::int64_t local_kv_heads(int tp) const;
  // Problems with the shape itself (heads and K/V heads, dims, bounds), under `where` and `key`.
  void check_shape(Diagnostics& diagnostics, const std::string& where, const std::string& key) const;
};

class TransformerModel final : public Model {
 public:
  explicit TransformerModel(TransformerConfig config) : config_(std::move(config)) {}
  const TransformerConfig& config() const { return config_; }
  const std::string& name() const override { return config_.name; }
  double parameters() const override { return config_.parameters(); }
  std::int64_t context() const override { return config_.context; }
  double forward_flops_per_token(std::int64_t seq) const override;
  void check(const RunLayout& layout, Diagnostics& diagnostics, const std::string& where) const override;
  std::string training_refusal() const override;
  std::shared_ptr<CausalLM> build(const BuildOptions& options) const override;

 private:
  TransformerConfig config_;
};

// The config's norm, registered on its owner as `name`.
class NormLayer {
 public:
  NormLayer() = default;
  NormLayer(torch::nn::Module& owner, const std::string& name, const TransformerConfig& config);
  torch::Tensor operator()(const torch::Tensor& x) const;
  const torch::nn::Module& module() const;  // the LayerNorm or RMSNorm

 private:
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::RMSNorm rms_norm_{nullptr};
};

// Where a block's attention finds its keys and values: a contiguous KV cache from `past` on,
// pages of a KV pool for a packed batch, or neither (training: the sequence itself).
struct AttentionKV {
  KVCache* cache = nullptr;
  std::int64_t past = 0;
  PagedKVCache* pages = nullptr;
  const PackedBatch* batch = nullptr;
};

class TransformerBlockImpl : public torch::nn::Module {
 public:
  // expert_skew: the routing's imbalance (expert_loads) for a mixture-of-experts MLP;
  // sequence_parallel: activations between the TP regions are sharded along the sequence.
  TransformerBlockImpl(const TransformerConfig& config, int tp_size, int tp_rank, double expert_skew = 0,
                       bool sequence_parallel = false);
  // x: [batch, seq, hidden] for the positions past .. past+seq; cache rows are this batch's.
  torch::Tensor forward(const torch::Tensor& x, KVCache& cache, std::int64_t past);
  // Serving: x [1, tokens, hidden], the tokens of a packed batch, their keys and values paged.
  torch::Tensor forward(const torch::Tensor& x, PagedKVCache& pages, const PackedBatch& batch);
  // Training: the whole sequence attends causally to itself, no cache (x: [batch, seq, hidden],
  // seq / tp of it under sequence parallelism).
  torch::Tensor forward(const torch::Tensor& x);
  // The dropout probability on the attention and MLP outputs before their residual adds (training
  // mode only).
  void set_hidden_dropout(double p) { hidden_dropout_ = p; }
  // Selective recomputation (training): the attention core under activation checkpointing, its
  // forward run again in the backward (Megatron-Core's checkpoint_core_attention).
  void set_checkpoint_core_attention(bool on) { checkpoint_core_attention_ = on; }
  // The dropout probability on the attention probabilities (training mode only).
  void set_attention_dropout(double p) { attention_dropout_ = p; }

 private:
  double hidden_dropout_ = 0;
  double attention_dropout_ = 0;
  bool checkpoint_core_attention_ = false;
  // The attention's output before the TP reduction (each rank's partial sum); no cache: training.
  torch::Tensor attention_partial(const torch::Tensor& x, const AttentionKV& kv);
  torch::Tensor attention(const torch::Tensor& x, const AttentionKV& kv);
  torch::Tensor block(const torch::Tensor& x, const AttentionKV& kv);
  torch::Tensor mlp(const torch::Tensor& x);
  // Expert parallel: the second half of the block on this rank's share of the tokens.
  torch::Tensor forward_expert_parallel(const torch::Tensor& x, const AttentionKV& kv);

  TransformerConfig config_;
  std::int64_t local_heads_, local_kv_heads_;
  NormLayer norm_1_, norm_2_;
  parallel::ColumnParallelLinear qkv_{nullptr}, up_{nullptr};
  parallel::RowParallelLinear out_{nullptr}, down_{nullptr};
  MoeMlp moe_{nullptr};
};
TORCH_MODULE(TransformerBlock);

// The part of the model one pipeline stage holds: the embeddings on the first stage, its share
// of the blocks, the final norm and head on the last.
class TransformerImpl : public CausalLM {
 public:
  // Uses the current parallel state (initialize_model_parallel) for TP, PP and EP.
  explicit TransformerImpl(const TransformerConfig& config, double expert_skew = 0, bool sequence_parallel = false);

  const TransformerConfig& config() const { return config_; }
  std::int64_t hidden_size() const override { return config_.hidden; }
  std::vector<KVCache> make_kv_cache(std::int64_t batch, std::int64_t max_seq) const override;
  torch::Tensor embed(const torch::Tensor& tokens, std::int64_t past) override;
  torch::Tensor blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) override;
  torch::Tensor next_token(const torch::Tensor& x) override;
  std::vector<PagedKVCache> make_paged_kv_cache(std::int64_t pages, std::int64_t page_tokens) const override;
  double kv_bytes_per_token(double element_bytes) const override;
  AttentionShape attention_shape() const override;
  torch::Tensor blocks_packed(torch::Tensor x, std::vector<PagedKVCache>& caches, const PackedBatch& batch) override;
  torch::Tensor sample_packed(const torch::Tensor& x, std::int64_t rows) override;

  // Training, one pipeline stage's forward over a micro-batch: the first stage takes token ids
  // [batch, seq], the others the previous stage's activations; the last returns this rank's
  // share of the vocabulary's logits [batch, seq, vocab / tp], the others their activations
  // ([batch, seq / tp, hidden] under sequence parallelism).
  torch::Tensor forward_train(const torch::Tensor& input) override;
  // The mean loss of the last stage's logits against labels [batch, seq] (vocabulary-parallel
  // cross-entropy).
  torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& labels) override;
  // Full recomputation: each layer under activation checkpointing; selective: each layer's
  // attention core.
  void set_recompute(Recompute recompute);
  void set_hidden_dropout(double p);
  void set_attention_dropout(double p);

 private:
  Recompute recompute_ = Recompute::none;
  TransformerConfig config_;
  bool sequence_parallel_ = false;
  std::int64_t padded_vocab_ = 0;
  std::int64_t first_layer_ = 0;
  parallel::VocabParallelEmbedding embed_tokens_{nullptr};
  torch::nn::Embedding embed_positions_{nullptr};
  std::vector<TransformerBlock> blocks_;
  NormLayer norm_;
  parallel::ColumnParallelLinear head_{nullptr};
};
TORCH_MODULE(Transformer);

}  // namespace syntorch::models
