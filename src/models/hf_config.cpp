#include "syntorch/models/hf_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "syntorch/base/input_file.hpp"
#include "syntorch/base/json.hpp"

namespace syntorch::models {

namespace {

namespace fs = std::filesystem;

// Reads the keys of a config's top-level object; each problem names the file and the key's
// JSON pointer. A key written as null is absent, as transformers reads it.
class ConfigKeys {
 public:
  ConfigKeys(const Json& doc, const std::string& file, Diagnostics& d) : doc_(doc), file_(file), d_(d) {}

  bool has(const char* key) const { return doc_.contains(key) && !doc_.at(key).is_null(); }

  std::int64_t integer(const char* key) {
    if (!has(key)) {
      d_.error(file_, json_child_pointer("", key), "missing (expected a positive integer)");
      return 0;
    }
    return positive(key);
  }
  std::int64_t integer(const char* key, std::int64_t otherwise) { return has(key) ? positive(key) : otherwise; }

  bool boolean(const char* key, bool otherwise) {
    if (!has(key)) return otherwise;
    const Json& v = doc_.at(key);
    if (!v.is_boolean()) {
      d_.error(file_, json_child_pointer("", key), fmt::format("expected true or false, got {}", describe_json(v)));
      return otherwise;
    }
    return v.get<bool>();
  }

  double fraction(const char* key, double otherwise) {
    if (!has(key)) return otherwise;
    const Json& v = doc_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) {
      d_.error(file_, json_child_pointer("", key), fmt::format("expected a number in (0, 1], got {}", describe_json(v)));
      return otherwise;
    }
    return v.get<double>();
  }

  std::string text(const char* key, const std::string& otherwise) {
    if (!has(key)) return otherwise;
    const Json& v = doc_.at(key);
    if (!v.is_string()) {
      d_.error(file_, json_child_pointer("", key), fmt::format("expected a string, got {}", describe_json(v)));
      return otherwise;
    }
    return v.get<std::string>();
  }

  // The activation, which must be one of `accepted`.
  void activation(const char* key, const std::vector<std::string>& accepted) {
    const std::string act = text(key, accepted.front());
    if (std::find(accepted.begin(), accepted.end(), act) == accepted.end()) {
      d_.error(file_, json_child_pointer("", key),
               fmt::format("activation \"{}\" is not modelled for this architecture (expected {})", act,
                           join(accepted, " or ")));
    }
  }

  // Keys that change the model's structure in ways the simulator does not model.
  void refuse(const char* key, const char* why) {
    if (has(key)) d_.error(file_, json_child_pointer("", key), why);
  }

  Diagnostics& diagnostics() { return d_; }
  const std::string& file() const { return file_; }

 private:
  std::int64_t positive(const char* key) {
    const Json& v = doc_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
      d_.error(file_, json_child_pointer("", key), fmt::format("expected a positive integer, got {}", describe_json(v)));
      return 0;
    }
    return v.get<std::int64_t>();
  }

  const Json& doc_;
  const std::string& file_;
  Diagnostics& d_;
};

constexpr const char* kMoe =
    "a mixture-of-experts architecture the simulator does not model (MixtralForCausalLM is the one it reads: "
    "routed SwiGLU experts without shared experts or latent attention)";

// LlamaForCausalLM and the models that share its config keys (transformers' LlamaConfig,
// MistralConfig, Qwen2Config).
void read_llama_like(ConfigKeys& k, TransformerConfig& c) {
  c.layers = k.integer("num_hidden_layers");
  c.hidden = k.integer("hidden_size");
  c.heads = k.integer("num_attention_heads");
  c.kv_heads = k.integer("num_key_value_heads", c.heads);
  c.ffn = k.integer("intermediate_size");
  c.vocab = k.integer("vocab_size");
  c.context = k.integer("max_position_embeddings");
  c.head_dim = k.integer("head_dim", c.heads > 0 ? c.hidden / c.heads : 0);
  c.norm = TransformerConfig::Norm::rmsnorm;
  c.positions = TransformerConfig::Positions::rotary;
  c.mlp = TransformerConfig::Mlp::swiglu;
  const double rotary = k.fraction("partial_rotary_factor", 1.0);
  c.rotary_dim = static_cast<std::int64_t>(std::floor(static_cast<double>(c.head_dim) * rotary));
  c.tie_embeddings = k.boolean("tie_word_embeddings", false);
  k.activation("hidden_act", {"silu"});
  if (c.architecture == "MixtralForCausalLM") {
    // transformers' MixtralConfig: num_local_experts experts of intermediate_size, top
    // num_experts_per_tok (defaults 8 and 2).
    c.experts = k.integer("num_local_experts", 8);
    c.experts_per_token = k.integer("num_experts_per_tok", 2);
    if (c.experts > 0 && c.experts_per_token > c.experts) {
      k.diagnostics().error(k.file(), "/num_experts_per_tok",
                            fmt::format("{} experts per token, but only {} experts (num_local_experts)",
                                        c.experts_per_token, c.experts));
    }
    c.sliding_window = k.integer("sliding_window", 0);
    return;
  }
  k.refuse("num_local_experts", kMoe);
  k.refuse("num_experts", kMoe);
  if (c.architecture == "Qwen2ForCausalLM") {
    c.qkv_bias = true;
    if (k.boolean("use_sliding_window", false)) c.sliding_window = k.integer("sliding_window");
  } else {
    c.qkv_bias = c.out_bias = k.boolean("attention_bias", false);
    c.mlp_bias = k.boolean("mlp_bias", false);
    if (c.architecture == "MistralForCausalLM") c.sliding_window = k.integer("sliding_window", 0);
  }
}

// The keys GPTJConfig and GPT2Config share (transformers names them the same).
void read_gpt_common(ConfigKeys& k, TransformerConfig& c) {
  c.layers = k.integer("n_layer");
  c.hidden = k.integer("n_embd");
  c.heads = c.kv_heads = k.integer("n_head");
  c.head_dim = c.heads > 0 ? c.hidden / c.heads : 0;
  c.ffn = k.integer("n_inner", 4 * c.hidden);
  c.vocab = k.integer("vocab_size");
  c.context = k.integer("n_positions");
  c.norm = TransformerConfig::Norm::layernorm;
  c.mlp = TransformerConfig::Mlp::gelu;
  k.activation("activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh"});
}

// transformers' GPTJConfig.
void read_gptj(ConfigKeys& k, TransformerConfig& c) {
  read_gpt_common(k, c);
  c.positions = TransformerConfig::Positions::rotary;
  c.rotary_dim = k.integer("rotary_dim", c.head_dim);
  c.parallel_block = true;
  c.mlp_bias = true;
  c.head_bias = true;
  c.tie_embeddings = k.boolean("tie_word_embeddings", false);
}

// transformers' GPT2Config.
void read_gpt2(ConfigKeys& k, TransformerConfig& c) {
  read_gpt_common(k, c);
  c.positions = TransformerConfig::Positions::learned;
  c.qkv_bias = c.out_bias = c.mlp_bias = true;
  c.tie_embeddings = k.boolean("tie_word_embeddings", true);
}

struct Architecture {
  const char* name;        // the class in "architectures"
  const char* model_type;  // its "model_type"
  void (*read)(ConfigKeys&, TransformerConfig&);
};

constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", read_llama_like},  {"MistralForCausalLM", "mistral", read_llama_like},
    {"Qwen2ForCausalLM", "qwen2", read_llama_like},  {"MixtralForCausalLM", "mixtral", read_llama_like},
    {"GPTJForCausalLM", "gptj", read_gptj},
    {"GPT2LMHeadModel", "gpt2", read_gpt2},
};

// Architectures known to be mixtures of experts, refused with that reason.
constexpr const char* kMoeArchitectures[] = {"Qwen2MoeForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
                                             "Qwen3MoeForCausalLM"};
constexpr const char* kMoeModelTypes[] = {"qwen2_moe", "deepseek_v2", "deepseek_v3", "qwen3_moe"};

std::vector<std::string> supported_names() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.emplace_back(a.name);
  return names;
}

// The architecture the config declares ("architectures"[0], else "model_type"); nullptr with the
// problem added.
const Architecture* architecture(const Json& doc, const std::string& file, Diagnostics& d) {
  if (doc.contains("architectures") && !doc.at("architectures").is_null()) {
    const Json& a = doc.at("architectures");
    if (!a.is_array() || a.empty() || !a.at(0).is_string()) {
      d.error(file, "/architectures",
              fmt::format("expected a list of class names (e.g. [\"LlamaForCausalLM\"]), got {}", describe_json(a)));
      return nullptr;
    }
    const std::string name = a.at(0).get<std::string>();
    for (const Architecture& arch : kArchitectures) {
      if (name == arch.name) return &arch;
    }
    const bool moe = std::any_of(std::begin(kMoeArchitectures), std::end(kMoeArchitectures),
                                 [&](const char* m) { return name == m; });
    d.error(file, "/architectures/0",
            moe ? fmt::format("{} is {}", name, kMoe)
                : fmt::format("unknown architecture \"{}\"{} (supported: {})", name,
                              did_you_mean(name, supported_names()), join(supported_names())));
    return nullptr;
  }
  if (doc.contains("model_type") && doc.at("model_type").is_string()) {
    const std::string type = doc.at("model_type").get<std::string>();
    for (const Architecture& arch : kArchitectures) {
      if (type == arch.model_type) return &arch;
    }
    std::vector<std::string> types;
    for (const Architecture& arch : kArchitectures) types.emplace_back(arch.model_type);
    const bool moe = std::any_of(std::begin(kMoeModelTypes), std::end(kMoeModelTypes),
                                 [&](const char* m) { return type == m; });
    d.error(file, "/model_type",
            moe ? fmt::format("\"{}\" is {}", type, kMoe)
                : fmt::format("unknown model_type \"{}\"{} (supported: {})", type, did_you_mean(type, types),
                              join(types)));
    return nullptr;
  }
  d.error(file, "/architectures", fmt::format("missing: a config.json names its class in \"architectures\" (or "
                                              "\"model_type\"); supported: {}", join(supported_names())));
  return nullptr;
}

}  // namespace

bool is_hf_config_spec(const std::string& spec) {
  if (spec.size() >= 5 && spec.compare(spec.size() - 5, 5, ".json") == 0) return true;
  std::error_code ec;
  return spec.find('/') != std::string::npos || fs::is_directory(spec, ec);
}

std::optional<TransformerConfig> load_hf_config(const std::string& path, Diagnostics& d) {
  std::error_code ec;
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  const std::size_t before = d.size();
  const std::optional<std::string> text = read_input_file(file, "a Hugging Face config.json", d);
  if (!text) return std::nullopt;
  const std::optional<Json> doc = parse_json_document(*text, file, d);
  if (!doc) return std::nullopt;
  if (!doc->is_object()) {
    d.error(file, "", "expected a JSON object at the top level, got " + describe_json(*doc));
    return std::nullopt;
  }
  const Architecture* arch = architecture(*doc, file, d);
  if (!arch) return std::nullopt;
  TransformerConfig c;
  c.name = path;
  c.architecture = arch->name;
  ConfigKeys keys(*doc, file, d);
  arch->read(keys, c);
  if (d.size() != before) return std::nullopt;
  if (c.heads > 0 && !keys.has("head_dim") && c.hidden % c.heads != 0) {
    d.error(file, "/hidden_size",
            fmt::format("{} is not a multiple of num_attention_heads ({}) and no head_dim is given", c.hidden, c.heads));
    return std::nullopt;
  }
  c.check_shape(d, file, "");
  if (d.size() != before) return std::nullopt;
  return c;
}

const ModelEntry kHfConfigModels{
    .family = "hf",
    .custom_form = "path/to/config.json",
    .zoo = [] { return std::vector<std::string>{}; },
    .parse = [](const std::string& spec, Diagnostics& d, const std::string& where) -> std::shared_ptr<const Model> {
      if (!is_hf_config_spec(spec)) return nullptr;
      // A path that names no readable file is the flag's (or the row's) problem: say which, and
      // that the text was taken for a path; a file that is there answers for its own contents.
      std::error_code ec;
      const std::string file = fs::is_directory(spec, ec) ? (fs::path(spec) / "config.json").string() : spec;
      if (std::string problem = input_file_problem(file, "a Hugging Face config.json", kMaxInputFileBytes);
          !problem.empty()) {
        d.error(where.empty() ? file : where, "",
                fmt::format("\"{}\": {}; a model is a zoo name, a custom shape (gpt:..., llama:...) or a path",
                            clip(file, 200), problem));
        return nullptr;
      }
      auto config = load_hf_config(spec, d);
      if (!config) return nullptr;
      return std::make_shared<TransformerModel>(std::move(*config));
    },
};

}  // namespace syntorch::models
