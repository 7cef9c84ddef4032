#pragma once
// A Hugging Face model's config.json read as a TransformerConfig, so a user's own checkpoint
// shape runs without writing code: --model path/to/config.json (or the folder holding it). The
// architectures read are LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPTJForCausalLM
// and GPT2LMHeadModel, from the keys transformers' own config classes define; a config whose
// architecture or structure the simulator does not model (mixture of experts, another activation)
// is an error naming the file and key, never a silently different model.

#include <optional>
#include <string>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/models/transformer.hpp"

namespace syntorch::models {

// The config at `path` (a config.json, or a folder holding one), named `path`; nullopt with its
// problems added (under the file's path, each with its JSON pointer).
std::optional<TransformerConfig> load_hf_config(const std::string& path, Diagnostics& diagnostics);

// Whether a model spec names a config file rather than a zoo model (it ends in .json or is a folder).
bool is_hf_config_spec(const std::string& spec);

// "path/to/config.json".
extern const ModelEntry kHfConfigModels;

}  // namespace syntorch::models
