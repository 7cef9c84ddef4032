#include "syntorch/models/llama.hpp"

#include <fmt/format.h>

#include <memory>

#include "shape_spec.hpp"

namespace syntorch::models {

TransformerConfig llama_shape(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                              std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab, std::int64_t context,
                              std::int64_t head_dim) {
  TransformerConfig c;
  c.name = std::move(name);
  c.architecture = "LlamaForCausalLM";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0);
  c.ffn = ffn;
  c.vocab = vocab;
  c.context = context;
  c.norm = TransformerConfig::Norm::rmsnorm;
  c.positions = TransformerConfig::Positions::rotary;
  c.rotary_dim = c.head_dim;
  c.mlp = TransformerConfig::Mlp::swiglu;
  return c;
}

const std::vector<TransformerConfig>& llama_family() {
  static const std::vector<TransformerConfig> family = [] {
    std::vector<TransformerConfig> f;
    //                  name            layers hidden heads kv  ffn    vocab   context
    f.push_back(llama_shape("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096));
    f.push_back(llama_shape("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096));
    f.push_back(llama_shape("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096));
    f.push_back(llama_shape("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192));
    f.push_back(llama_shape("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192));
    f.push_back(llama_shape("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256, 131072));
    f.push_back(llama_shape("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256, 131072));
    f.push_back(llama_shape("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 131072));
    f.push_back(llama_shape("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, 64));
    f.push_back(llama_shape("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256, 131072, 128));
    f[8].tie_embeddings = f[9].tie_embeddings = true;
    TransformerConfig mistral = llama_shape("mistral-7b", 32, 4096, 32, 8, 14336, 32768, 32768);
    mistral.architecture = "MistralForCausalLM";
    f.push_back(mistral);
    // Mixtral: Mistral's blocks with 8 SwiGLU experts of the dense width, top 2 per token
    // (Jiang et al., "Mixtral of Experts", 2024, table 1; the released config.json files:
    // 8x7B 32 layers, hidden 4096, 32 heads, 8 KV heads, experts of 14336, vocab 32000, 32768
    // positions; 8x22B 56 layers, hidden 6144, 48 heads, 8 KV heads, experts of 16384, vocab
    // 32768 as Instruct v0.1 (the base v0.1 has 32000), 65536 positions). No sliding window in
    // either release.
    for (TransformerConfig mixtral : {llama_shape("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768),
                                      llama_shape("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536)}) {
      mixtral.architecture = "MixtralForCausalLM";
      mixtral.experts = 8;
      mixtral.experts_per_token = 2;
      f.push_back(mixtral);
    }
    for (TransformerConfig qwen : {llama_shape("qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064, 32768),
                                   llama_shape("qwen2.5-72b", 80, 8192, 64, 8, 29568, 152064, 32768)}) {
      qwen.architecture = "Qwen2ForCausalLM";
      qwen.qkv_bias = true;
      f.push_back(qwen);
    }
    return f;
  }();
  return family;
}

namespace {

std::shared_ptr<const Model> parse_llama(const std::string& spec, Diagnostics& d, const std::string& where) {
  for (const TransformerConfig& c : llama_family()) {
    if (c.name == spec) return std::make_shared<TransformerModel>(c);
  }
  const std::string_view prefix = "llama:";
  if (spec.rfind(prefix, 0) != 0) return nullptr;
  static constexpr ShapeKey kKeys[] = {{"layers", 4096, true},    {"hidden", 1 << 18, true},  {"heads", 4096, true},
                                       {"kv_heads", 4096, false}, {"ffn", 1 << 20, true},     {"vocab", 1 << 24, true},
                                       {"head_dim", 4096, false}, {"context", 1 << 24, false},
                                       {"experts", 4096, false},  {"top_k", 4096, false}};
  const auto v = parse_shape_spec(spec, prefix, kKeys, d, where);
  if (!v) return nullptr;
  auto get = [&](const char* key, std::int64_t otherwise) { return v->count(key) ? v->at(key) : otherwise; };
  const std::int64_t heads = v->at("heads"), hidden = v->at("hidden");
  if (!v->count("head_dim") && hidden % heads != 0) {
    d.error(where, "", fmt::format("model \"{}\": hidden ({}) must be a multiple of heads ({}) unless head_dim= is given",
                                   spec, hidden, heads));
    return nullptr;
  }
  TransformerConfig c = llama_shape(spec, v->at("layers"), hidden, heads, get("kv_heads", heads), v->at("ffn"),
                                    v->at("vocab"), get("context", 4096), get("head_dim", 0));
  if (v->count("experts") || v->count("top_k")) {
    c.architecture = "MixtralForCausalLM";
    c.experts = get("experts", 0);
    c.experts_per_token = get("top_k", c.experts >= 2 ? 2 : 1);
  }
  const std::size_t before = d.size();
  c.check_shape(d, where, "");
  if (d.size() != before) return nullptr;
  return std::make_shared<TransformerModel>(std::move(c));
}

}  // namespace

const ModelEntry kLlamaModels{
    .family = "llama",
    .custom_form = "llama:layers=L,hidden=H,heads=N,kv_heads=K,ffn=F,vocab=V[,experts=E,top_k=K]",
    .zoo =
        [] {
          std::vector<std::string> names;
          for (const TransformerConfig& c : llama_family()) names.push_back(c.name);
          return names;
        },
    .parse = parse_llama,
};

}  // namespace syntorch::models
