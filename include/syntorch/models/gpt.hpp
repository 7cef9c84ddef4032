#pragma once
// GPT, as the GPT-3 paper describes it (Brown et al., 2020, section 2.1 and table 2.1): learned
// token and position embeddings, pre-LayerNorm transformer blocks (multi-head attention, then a
// 4x-wide GELU MLP), a final LayerNorm and a head tied in shape to the token embedding. It runs as
// a configuration of the general decoder-only transformer (models/transformer.hpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/models/transformer.hpp"

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

// The transformer a GPT config runs as (LayerNorm, learned positions, GELU MLP, biases on every
// projection, the head tied to the token embedding).
TransformerConfig as_transformer(const GPTConfig& config);

// The GPT family as zoo models (registered in src/models/registry.cpp).
extern const ModelEntry kGptModels;

}  // namespace syntorch::models
