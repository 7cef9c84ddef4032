#include "syntorch/models/gpt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "layout_checks.hpp"
#include "shape_spec.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::models {

double GPTConfig::parameters() const {
  const double h = static_cast<double>(hidden);
  const double attn = static_cast<double>(heads * head_dim);
  const double per_block = 4 * h                       // two LayerNorms
                           + h * 3 * attn + 3 * attn    // qkv
                           + attn * h + h               // attention output
                           + 2 * h * static_cast<double>(ffn) + static_cast<double>(ffn) + h;  // MLP
  return static_cast<double>(layers) * per_block + static_cast<double>(vocab + context) * h + 2 * h;
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

void GPTModel::check(const RunLayout& l, Diagnostics& d, const std::string& where) const {
  const GPTConfig& c = config_;
  check_decoder_layout({c.name, std::max(c.hidden, c.heads * c.head_dim), c.heads, c.ffn, c.layers}, l, d, where);
}

void GPTModel::generate(const GenerateOptions& options) const {
  GPT model(config_);
  model->eval();
  models::generate(*model, options);
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
      return std::make_shared<GPTModel>(std::move(*config));
    },
};

GPTBlockImpl::GPTBlockImpl(const GPTConfig& c, int tp, int rank) : torch::nn::Module("GPTBlock") {
  if (c.heads % tp != 0) {
    throw std::invalid_argument(fmt::format("{}: {} heads do not split over tensor parallel {}", c.name, c.heads, tp));
  }
  local_heads = c.heads / tp;
  head_dim = c.head_dim;
  const std::int64_t attn = c.heads * c.head_dim;
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  qkv = register_module("qkv", parallel::ColumnParallelLinear(c.hidden, 3 * attn, tp, rank, false));
  proj = register_module("proj", parallel::RowParallelLinear(attn, c.hidden, tp, rank, true));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  fc_1 = register_module("fc_1", parallel::ColumnParallelLinear(c.hidden, c.ffn, tp, rank, false));
  gelu = register_module("gelu", torch::nn::GELU());
  fc_2 = register_module("fc_2", parallel::RowParallelLinear(c.ffn, c.hidden, tp, rank, true));
}

torch::Tensor GPTBlockImpl::forward(const torch::Tensor& x, KVCache& cache, std::int64_t past) {
  const std::int64_t b = x.size(0), s = x.size(1);
  torch::Tensor qkv_out = qkv->forward(ln_1->forward(x));  // [b, s, 3 * heads/tp * d]
  torch::Tensor parts = qkv_out.view({b, s, 3, local_heads, head_dim});
  torch::Tensor q = parts.select(2, 0).transpose(1, 2);  // [b, heads/tp, s, d]
  cache.keys.narrow(2, past, s).copy_(parts.select(2, 1).transpose(1, 2));
  cache.values.narrow(2, past, s).copy_(parts.select(2, 2).transpose(1, 2));
  torch::Tensor keys = cache.keys.narrow(2, 0, past + s);
  torch::Tensor values = cache.values.narrow(2, 0, past + s);
  torch::Tensor a = torch::scaled_dot_product_attention(q, keys, values, {}, 0.0, /*is_causal=*/s > 1);
  a = a.transpose(1, 2).reshape({b, s, local_heads * head_dim});
  torch::Tensor h = x + proj->forward(a);
  return h + fc_2->forward(gelu->forward(fc_1->forward(ln_2->forward(h))));
}

GPTImpl::GPTImpl(const GPTConfig& c) : CausalLM("GPT"), config_(c) {
  const parallel::ParallelState& st = parallel::state();
  if (c.layers % st.pp_size != 0) {
    throw std::invalid_argument(
        fmt::format("{}: {} layers do not split evenly over {} pipeline stages", c.name, c.layers, st.pp_size));
  }
  // Megatron pads the vocabulary to a multiple of 128 x TP so that it splits evenly.
  const std::int64_t multiple = 128 * st.tp_size;
  padded_vocab_ = (c.vocab + multiple - 1) / multiple * multiple;
  const std::int64_t per_stage = c.layers / st.pp_size;
  first_layer_ = st.pp_rank * per_stage;
  if (st.is_first_stage()) {
    wte_ = register_module("wte", parallel::VocabParallelEmbedding(padded_vocab_, c.hidden, st.tp_size, st.tp_rank));
    wpe_ = register_module("wpe", torch::nn::Embedding(c.context, c.hidden));
  }
  for (std::int64_t i = 0; i < per_stage; ++i) {
    blocks_.push_back(register_module(fmt::format("h_{}", first_layer_ + i), GPTBlock(c, st.tp_size, st.tp_rank)));
  }
  if (st.is_last_stage()) {
    ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
    // The head shares the embedding's shape (GPT ties them); on a separate last stage it is its
    // own copy, as in Megatron.
    if (!st.is_first_stage() || st.pp_size > 1) {
      head_ = register_module("head", parallel::ColumnParallelLinear(c.hidden, padded_vocab_, st.tp_size, st.tp_rank,
                                                                     true, false));
    }
  }
}

std::vector<KVCache> GPTImpl::make_kv_cache(std::int64_t batch, std::int64_t max_seq) const {
  torch::MemoryUseGuard guard(torch::MemoryUse::kv_cache);
  std::vector<KVCache> caches;
  const std::int64_t local_heads = config_.heads / parallel::state().tp_size;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    KVCache c;
    c.keys = torch::empty({batch, local_heads, max_seq, config_.head_dim}, torch::get_default_dtype());
    c.values = torch::empty({batch, local_heads, max_seq, config_.head_dim}, torch::get_default_dtype());
    caches.push_back(std::move(c));
  }
  return caches;
}

torch::Tensor GPTImpl::embed(const torch::Tensor& tokens, std::int64_t past) {
  const std::int64_t s = tokens.size(1);
  torch::Tensor positions = torch::arange(past, past + s);
  return wte_->forward(tokens) + wpe_->forward(positions);
}

torch::Tensor GPTImpl::blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) {
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    torch::RecordScope layer(fmt::format("layer {}", first_layer_ + static_cast<std::int64_t>(i)));
    x = blocks_[i]->forward(x, caches[i], past);
  }
  return x;
}

torch::Tensor GPTImpl::next_token(const torch::Tensor& x) {
  torch::Tensor last = x.narrow(1, x.size(1) - 1, 1);  // [b, 1, hidden]
  torch::Tensor h = ln_f_->forward(last);
  torch::Tensor logits = head_ ? head_->forward(h)
                               : [&] {
                                   // Tied head: the vocabulary-parallel embedding's weight, then gathered.
                                   torch::Tensor local = torch::nn::functional::linear(h, wte_->weight);
                                   return parallel::all_gather(local, parallel::state().tp_group, -1);
                                 }();
  return logits.argmax(-1);  // [b, 1]
}

}  // namespace syntorch::models
