#pragma once
// GPT-J 6B (Wang and Komatsuzaki, 2021; EleutherAI's released config): 28 blocks of attention and
// MLP side by side off one LayerNorm, rotary positions on the first 64 of each head's 256 dims, a
// 4x GELU MLP with biases, and an untied head with a bias.

#include "syntorch/models/registry.hpp"
#include "syntorch/models/transformer.hpp"

namespace syntorch::models {

TransformerConfig gptj_6b();

// "gptj-6b".
extern const ModelEntry kGptjModels;

}  // namespace syntorch::models
