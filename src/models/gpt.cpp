#include "syntorch/models/gpt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "shape_spec.hpp"

namespace syntorch::models {

// Counted by the transformer it runs as: two LayerNorms, biased q/k/v, output and MLP, learned
// positions, the head tied to the token embedding.
double GPTConfig::parameters() const { return as_transformer(*this).parameters(); }

TransformerConfig as_transformer(const GPTConfig& g) {
  TransformerConfig c;
  c.name = g.name;
  c.architecture = "GPT";
  c.layers = g.layers;
  c.hidden = g.hidden;
  c.heads = c.kv_heads = g.heads;
  c.head_dim = g.head_dim;
  c.ffn = g.ffn;
  c.vocab = g.vocab;
  c.context = g.context;
  c.norm = TransformerConfig::Norm::layernorm;
  c.positions = TransformerConfig::Positions::learned;
  c.mlp = TransformerConfig::Mlp::gelu;
  c.qkv_bias = c.out_bias = c.mlp_bias = true;
  c.tie_embeddings = true;
  return c;
}

const std::vector<GPTConfig>& gpt3_family() {
  // Brown et al., "Language Models are Few-Shot Learners" (2020), table 2.1: n_layers, d_model,
  // n_heads, d_head; context 2048 and the 50257-token BPE vocabulary for all.
  static const std::vector<GPTConfig> family = [] {
    struct Row {
      const char* name;
      std::int64_t layers, d_model, heads, d_head;
    };
    const Row rows[] = {{"gpt3-125m", 12, 768, 12, 64},     {"gpt3-350m", 24, 1024, 16, 64},
                        {"gpt3-760m", 24, 1536, 16, 96},    {"gpt3-1.3b", 24, 2048, 24, 128},
                        {"gpt3-2.7b", 32, 2560, 32, 80},    {"gpt3-6.7b", 32, 4096, 32, 128},
                        {"gpt3-13b", 40, 5140, 40, 128},    {"gpt3-175b", 96, 12288, 96, 128}};
    std::vector<GPTConfig> out;
    for (const Row& r : rows) {
      GPTConfig c;
      c.name = r.name;
      c.layers = r.layers;
      c.hidden = r.d_model;
      c.heads = r.heads;
      c.head_dim = r.d_head;
      c.ffn = 4 * r.d_model;
      out.push_back(c);
    }
    return out;
  }();
  return family;
}

std::optional<GPTConfig> parse_gpt_config(const std::string& spec, Diagnostics& d, const std::string& where) {
  for (const GPTConfig& c : gpt3_family()) {
    if (c.name == spec) return c;
  }
  const std::string prefix = "gpt:";
  if (spec.rfind(prefix, 0) != 0) return std::nullopt;
  static constexpr ShapeKey kKeys[] = {{"layers", 4096, true},   {"hidden", 1 << 18, true}, {"heads", 4096, true},
                                       {"vocab", 1 << 24, true},  {"head_dim", 4096, false}, {"ffn", 1 << 20, false},
                                       {"context", 1 << 24, false}};
  auto parsed = parse_shape_spec(spec, prefix, kKeys, d, where);
  if (!parsed) return std::nullopt;
  std::map<std::string, std::int64_t>& values = *parsed;
  GPTConfig c;
  c.name = spec;
  c.layers = values["layers"];
  c.hidden = values["hidden"];
  c.heads = values["heads"];
  c.vocab = values["vocab"];
  c.ffn = values.count("ffn") ? values["ffn"] : 4 * c.hidden;
  c.context = values.count("context") ? values["context"] : 2048;
  if (values.count("head_dim")) {
    c.head_dim = values["head_dim"];
  } else if (c.hidden % c.heads != 0) {
    d.error(where, "", fmt::format("model \"{}\": hidden ({}) must be a multiple of heads ({}) unless head_dim= is given",
                                   spec, c.hidden, c.heads));
    return std::nullopt;
  } else {
    c.head_dim = c.hidden / c.heads;
  }
  return c;
}

const ModelEntry kGptModels{
    .family = "gpt",
    .custom_form = "gpt:layers=L,hidden=H,heads=N,vocab=V",
    .zoo =
        [] {
          std::vector<std::string> names;
          for (const GPTConfig& c : gpt3_family()) names.push_back(c.name);
          return names;
        },
    .parse = [](const std::string& spec, Diagnostics& d, const std::string& where) -> std::shared_ptr<const Model> {
      auto config = parse_gpt_config(spec, d, where);
      if (!config) return nullptr;
      return std::make_shared<TransformerModel>(as_transformer(*config));
    },
};

}  // namespace syntorch::models
