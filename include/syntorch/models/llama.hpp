#pragma once
// The Llama family and the models built the same way, as TransformerConfigs: Llama 2 (Touvron et
// al., 2023), Llama 3, 3.1 and 3.2 (Llama Team, "The Llama 3 Herd of Models", 2024, table 3, and
// the released configs), Mistral 7B v0.3 (Jiang et al., 2023, table 1; v0.3 drops the sliding
// window and has a 32768-token vocabulary) and Qwen2.5 (Qwen Team, 2024: q/k/v biases). All use
// RMSNorm, rotary positions, a SwiGLU MLP and grouped-query attention where kv_heads < heads.

#include <cstdint>
#include <string>
#include <vector>

#include "syntorch/models/registry.hpp"
#include "syntorch/models/transformer.hpp"

namespace syntorch::models {

// A Llama-shaped model: RMSNorm, rotary over the whole head, SwiGLU, no biases, untied head,
// head_dim = hidden / heads unless given.
TransformerConfig llama_shape(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                              std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab, std::int64_t context,
                              std::int64_t head_dim = 0);

// The named models: llama2-7b/13b/70b, llama3-8b/70b, llama3.1-8b/70b/405b, llama3.2-1b/3b,
// mistral-7b, qwen2.5-7b/72b.
const std::vector<TransformerConfig>& llama_family();

// A zoo name, or "llama:layers=L,hidden=H,heads=N,kv_heads=K,ffn=F,vocab=V" (optional: head_dim,
// context, default 4096; kv_heads defaults to heads).
extern const ModelEntry kLlamaModels;

}  // namespace syntorch::models
