#include "syntorch/models/gptj.hpp"

#include <memory>

namespace syntorch::models {

TransformerConfig gptj_6b() {
  TransformerConfig c;
  c.name = "gptj-6b";
  c.architecture = "GPTJForCausalLM";
  c.layers = 28;
  c.hidden = 4096;
  c.heads = c.kv_heads = 16;
  c.head_dim = 256;
  c.ffn = 16384;
  c.vocab = 50400;
  c.context = 2048;
  c.norm = TransformerConfig::Norm::layernorm;
  c.positions = TransformerConfig::Positions::rotary;
  c.rotary_dim = 64;
  c.mlp = TransformerConfig::Mlp::gelu;
  c.parallel_block = true;
  c.mlp_bias = true;
  c.head_bias = true;
  return c;
}

const ModelEntry kGptjModels{
    .family = "gptj",
    .custom_form = "",
    .zoo = [] { return std::vector<std::string>{gptj_6b().name}; },
    .parse = [](const std::string& spec, Diagnostics&, const std::string&) -> std::shared_ptr<const Model> {
      if (spec != gptj_6b().name) return nullptr;
      return std::make_shared<TransformerModel>(gptj_6b());
    },
};

}  // namespace syntorch::models
