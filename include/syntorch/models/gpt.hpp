#pragma once
// GPT, as the GPT-3 paper describes it (Brown et al., 2020, section 2.1 and table 2.1): learned
// token and position embeddings, pre-LayerNorm transformer blocks (multi-head attention, then a
// 4x-wide GELU MLP), a final LayerNorm and a head tied in shape to the token embedding. Written
// only against the public torch and parallel API, as a user's own model would be: Megatron
// tensor parallelism inside each block, pipeline stages over the blocks, and autoregressive
// generation with a per-layer KV cache.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/generation.hpp"
#include "syntorch/models/model.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/parallel/layers.hpp"
#include "syntorch/torch/modules.hpp"

namespace syntorch::models {

struct GPTConfig {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;      // d_model
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;    // d_head (heads * head_dim need not equal d_model: see GPT-3 XL)
  std::int64_t ffn = 0;         // MLP width, 4 * d_model
  std::int64_t vocab = 50257;
  std::int64_t context = 2048;

  // Weights of the whole model (embeddings counted once, the head tied to them).
  double parameters() const;
};

// The eight GPT-3 models of the paper's table 2.1, named gpt3-125m ... gpt3-175b.
const std::vector<GPTConfig>& gpt3_family();

// "gpt3-13b", or a custom shape "gpt:layers=44,hidden=6144,heads=48,vocab=51200" (optional keys:
// head_dim, ffn, context). nullopt for a spec that is neither (nothing added); for a "gpt:" spec
// that is wrong, problems are added under `where` (a flag, a file row) and nullopt returned.
std::optional<GPTConfig> parse_gpt_config(const std::string& spec, Diagnostics& diagnostics, const std::string& where);

// The GPT family as a zoo model (registered in src/models/registry.cpp).
class GPTModel final : public Model {
 public:
  explicit GPTModel(GPTConfig config) : config_(std::move(config)) {}
  const GPTConfig& config() const { return config_; }
  const std::string& name() const override { return config_.name; }
  double parameters() const override { return config_.parameters(); }
  std::int64_t context() const override { return config_.context; }
  void check(const RunLayout& layout, Diagnostics& diagnostics, const std::string& where) const override;
  void generate(const GenerateOptions& options) const override;

 private:
  GPTConfig config_;
};
extern const ModelEntry kGptModels;

class GPTBlockImpl : public torch::nn::Module {
 public:
  GPTBlockImpl(const GPTConfig& config, int tp_size, int tp_rank);
  // x: [batch, seq, hidden] for the positions past .. past+seq; cache rows are this batch's.
  torch::Tensor forward(const torch::Tensor& x, KVCache& cache, std::int64_t past);

  std::int64_t local_heads, head_dim;
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  parallel::ColumnParallelLinear qkv{nullptr}, fc_1{nullptr};
  parallel::RowParallelLinear proj{nullptr}, fc_2{nullptr};
  torch::nn::GELU gelu{nullptr};
};
TORCH_MODULE(GPTBlock);

// The part of a GPT one pipeline stage holds: the embeddings on the first stage, its share of the
// blocks, the final LayerNorm and head on the last.
class GPTImpl : public CausalLM {
 public:
  // Uses the current parallel state (initialize_model_parallel) for TP and PP.
  explicit GPTImpl(const GPTConfig& config);

  const GPTConfig& config() const { return config_; }
  std::int64_t padded_vocab() const { return padded_vocab_; }
  std::int64_t first_layer() const { return first_layer_; }
  std::int64_t local_layers() const { return static_cast<std::int64_t>(blocks_.size()); }

  std::int64_t hidden_size() const override { return config_.hidden; }
  std::vector<KVCache> make_kv_cache(std::int64_t batch, std::int64_t max_seq) const override;
  torch::Tensor embed(const torch::Tensor& tokens, std::int64_t past) override;
  torch::Tensor blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) override;
  torch::Tensor next_token(const torch::Tensor& x) override;

 private:
  GPTConfig config_;
  std::int64_t padded_vocab_ = 0;
  std::int64_t first_layer_ = 0;
  parallel::VocabParallelEmbedding wte_{nullptr};
  torch::nn::Embedding wpe_{nullptr};
  std::vector<GPTBlock> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  parallel::ColumnParallelLinear head_{nullptr};
};
TORCH_MODULE(GPT);

}  // namespace syntorch::models
