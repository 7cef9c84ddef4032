#include "syntorch/models/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "syntorch/parallel/cross_entropy.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/parallel/mappings.hpp"
#include "syntorch/parallel/parameter_sync.hpp"
#include "syntorch/parallel/training.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/fused.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::models {

double TransformerConfig::attention_weights() const {
  const double h = static_cast<double>(hidden);
  const double q = static_cast<double>(heads * head_dim);
  const double kv = static_cast<double>(kv_heads * head_dim);
  return h * (q + 2 * kv) + q * h;
}

double TransformerConfig::mlp_weights(std::int64_t mlps) const {
  const double h = static_cast<double>(hidden);
  const double f = static_cast<double>(ffn);
  return static_cast<double>(mlps) * (mlp == Mlp::swiglu ? 3 * h * f : 2 * h * f);
}

double TransformerConfig::parameters() const {
  const double h = static_cast<double>(hidden);
  const double q = static_cast<double>(heads * head_dim);
  const double kv = static_cast<double>(kv_heads * head_dim);
  const double f = static_cast<double>(ffn);
  const double norm_weights = norm == Norm::layernorm ? 2 * h : h;
  const double attention = attention_weights() + (qkv_bias ? q + 2 * kv : 0) + (out_bias ? h : 0);
  // A mixture of experts: each expert's MLP and its row of the router.
  const double mlp_weights = moe() ? this->mlp_weights(experts) + static_cast<double>(experts) * h : this->mlp_weights(1);
  const double mlp_biases = mlp_bias ? (mlp == Mlp::swiglu ? 2 * f : f) + h : 0;
  const double per_block = (parallel_block ? 1 : 2) * norm_weights + attention + mlp_weights + mlp_biases;
  const double v = static_cast<double>(vocab);
  const double embeddings = v * h + (positions == Positions::learned ? static_cast<double>(context) * h : 0);
  const double head = (tie_embeddings ? 0 : v * h) + (head_bias ? v : 0);
  return static_cast<double>(layers) * per_block + embeddings + norm_weights + head;
}

double TransformerModel::forward_flops_per_token(std::int64_t seq) const {
  const TransformerConfig& c = config_;
  const double h = static_cast<double>(c.hidden);
  const double q = static_cast<double>(c.heads * c.head_dim);
  const double weights = c.attention_weights() + c.mlp_weights(c.moe() ? c.experts_per_token : 1);
  const double attention = 2.0 * static_cast<double>(seq) * q;  // QKᵀ and AV: 2 x seq x q MACs a token
  return static_cast<double>(c.layers) * (2 * weights + 2 * attention) + 2 * h * static_cast<double>(c.vocab);
}

std::int64_t TransformerConfig::local_kv_heads(int tp) const { return std::max<std::int64_t>(1, kv_heads / tp); }

void TransformerConfig::check_shape(Diagnostics& d, const std::string& where, const std::string& key) const {
  auto positive = [&](std::int64_t v, const char* what, std::int64_t most) {
    if (v <= 0) {
      d.error(where, key, fmt::format("{}: {} must be positive, got {}", name, what, v));
    } else if (v > most) {
      // Bounds past every published model by far, so a typo cannot start a run of days.
      d.error(where, key, fmt::format("{}: {} must be at most {}, got {}", name, what, most, v));
    }
  };
  positive(layers, "layers", 4096);
  positive(hidden, "hidden size", 1 << 18);
  positive(heads, "attention heads", 4096);
  positive(kv_heads, "key/value heads", 4096);
  positive(head_dim, "head dim", 4096);
  positive(ffn, "MLP width", 1 << 20);
  positive(vocab, "vocabulary", 1 << 24);
  positive(context, "context", 1 << 24);
  if (heads > 0 && kv_heads > 0 && heads % kv_heads != 0) {
    d.error(where, key, fmt::format("{}: {} attention heads are not a multiple of {} key/value heads", name, heads,
                                    kv_heads));
  }
  if (experts > 0 || experts_per_token > 0) {
    positive(experts, "experts", 4096);
    if (experts_per_token < 1 || experts_per_token > experts) {
      d.error(where, key, fmt::format("{}: experts per token must be in [1, experts = {}], got {}", name, experts,
                                      experts_per_token));
    }
    if (mlp != Mlp::swiglu || parallel_block || mlp_bias) {
      d.error(where, key, fmt::format("{}: experts are modelled as SwiGLU MLPs without biases in sequential blocks",
                                      name));
    }
  }
  if (positions == Positions::rotary && (rotary_dim <= 0 || rotary_dim > head_dim || rotary_dim % 2 != 0)) {
    d.error(where, key, fmt::format("{}: the rotary dims ({}) must be even and in [2, head dim = {}]", name, rotary_dim,
                                    head_dim));
  }
}

void TransformerModel::check(const RunLayout& l, Diagnostics& d, const std::string& where) const {
  const TransformerConfig& c = config_;
  const double widest = static_cast<double>(std::max({c.hidden, c.heads * c.head_dim, c.ffn}));
  if (static_cast<double>(l.batch) * static_cast<double>(l.tokens) * widest > 0x1p52) {
    d.error(where, "batch", fmt::format("batch {} x {} tokens of {} is beyond what the simulator can size (2^52 "
                                        "elements per tensor)", l.batch, l.tokens, c.name));
  }
  // Positions past the trained context run (a position costs the same; reports note it), but not
  // past a sliding window, whose banded attention is not modelled.
  if (c.sliding_window > 0 && l.tokens > c.sliding_window) {
    d.error(where, "input-tokens",
            fmt::format("{} attends over a sliding window of {} positions, which the simulator does not model; runs "
                        "of at most {} positions (input + output, here {}) are exact", c.name, c.sliding_window,
                        c.sliding_window, l.tokens));
  }
  if (c.heads % l.tp != 0) {
    d.error(where, "tp", fmt::format("{} has {} heads, which do not split over tp {}", c.name, c.heads, l.tp));
  }
  if (c.kv_heads % l.tp != 0 && l.tp % c.kv_heads != 0) {
    d.error(where, "tp", fmt::format("{}'s {} key/value heads neither split over tp {} nor replicate evenly across it",
                                     c.name, c.kv_heads, l.tp));
  }
  if (l.ep > 1 && !c.moe()) {
    d.error(where, "ep", fmt::format("{} has no experts to spread over ep {} (expert parallelism is for "
                                     "mixture-of-experts models)", c.name, l.ep));
  } else if (l.ep < 1 || l.tp % l.ep != 0) {
    d.error(where, "ep", fmt::format("ep {} must divide tp {}: expert parallelism spreads the experts over the "
                                     "tensor-parallel ranks of a stage", l.ep, l.tp));
  } else if (c.moe() && c.experts % l.ep != 0) {
    d.error(where, "ep", fmt::format("{}'s {} experts do not split over ep {}", c.name, c.experts, l.ep));
  }
  // An MLP (each expert's, under expert parallelism) splits over the ranks that share it.
  const int mlp_split = c.moe() && l.ep > 1 && l.tp % l.ep == 0 ? l.tp / l.ep : l.tp;
  if (c.ffn % mlp_split != 0) {
    d.error(where, "tp", fmt::format("{}'s MLP width {} does not split over {} ranks", c.name, c.ffn, mlp_split));
  }
  if (c.layers % l.pp != 0) {
    d.error(where, "pp", fmt::format("{} has {} layers, which do not split evenly over pp {}", c.name, c.layers, l.pp));
  }
}

std::string TransformerModel::training_refusal() const {
  if (!config_.moe()) return "";
  return fmt::format("{}: training a mixture of experts is not modelled yet (its routing, permutation and grouped "
                     "GEMMs have no backward)", config_.name);
}

std::shared_ptr<CausalLM> TransformerModel::build(const BuildOptions& o) const {
  if (o.training) {
    if (const std::string why = training_refusal(); !why.empty()) throw std::invalid_argument(why);
  }
  Transformer model(config_, o.expert_skew, o.sequence_parallel);
  if (o.training) {
    model->train();
    model->set_recompute(o.recompute);
    model->set_hidden_dropout(o.hidden_dropout);
    model->set_attention_dropout(o.attention_dropout);
  } else {
    model->eval();
  }
  return model.ptr();
}

const torch::nn::Module& NormLayer::module() const {
  return layer_norm_ ? static_cast<const torch::nn::Module&>(*layer_norm_) : *rms_norm_;
}

NormLayer::NormLayer(torch::nn::Module& owner, const std::string& name, const TransformerConfig& c) {
  if (c.norm == TransformerConfig::Norm::layernorm) {
    layer_norm_ = owner.register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  } else {
    rms_norm_ = owner.register_module(name, torch::nn::RMSNorm(torch::nn::RMSNormOptions({c.hidden})));
  }
}

torch::Tensor NormLayer::operator()(const torch::Tensor& x) const {
  return layer_norm_ ? layer_norm_->forward(x) : rms_norm_->forward(x);
}

TransformerBlockImpl::TransformerBlockImpl(const TransformerConfig& c, int tp, int rank, double expert_skew, bool sp)
    : torch::nn::Module("TransformerBlock"), config_(c) {
  if (c.heads % tp != 0) {
    throw std::invalid_argument(fmt::format("{}: {} heads do not split over tensor parallel {}", c.name, c.heads, tp));
  }
  local_heads_ = c.heads / tp;
  local_kv_heads_ = c.local_kv_heads(tp);
  const std::int64_t qkv_width = (local_heads_ + 2 * local_kv_heads_) * c.head_dim;
  const std::int64_t mlp_in = c.mlp == TransformerConfig::Mlp::swiglu ? 2 * c.ffn : c.ffn;
  norm_1_ = NormLayer(*this, "input_layernorm", c);
  qkv_ = register_module("qkv_proj", parallel::ColumnParallelLinear(c.hidden, qkv_width * tp, tp, rank, false,
                                                                    c.qkv_bias, sp));
  out_ = register_module("o_proj", parallel::RowParallelLinear(c.heads * c.head_dim, c.hidden, tp, rank, true,
                                                               c.out_bias, sp));
  if (!c.parallel_block) norm_2_ = NormLayer(*this, "post_attention_layernorm", c);
  if (c.moe()) {
    moe_ = register_module("block_sparse_moe",
                           MoeMlp(MoeOptions{c.hidden, c.ffn, c.experts, c.experts_per_token, expert_skew}));
    return;
  }
  up_ = register_module("gate_up_proj", parallel::ColumnParallelLinear(c.hidden, mlp_in, tp, rank, false,
                                                                       c.mlp_bias, sp));
  down_ = register_module("down_proj", parallel::RowParallelLinear(c.ffn, c.hidden, tp, rank, true, c.mlp_bias, sp));
}

torch::Tensor TransformerBlockImpl::attention(const torch::Tensor& x, const AttentionKV& kv) {
  return out_->forward(attention_partial(x, kv));
}

torch::Tensor TransformerBlockImpl::attention_partial(const torch::Tensor& x, const AttentionKV& kv) {
  torch::Tensor qkv = qkv_->forward(x);  // the whole sequence (gathered under sequence parallelism)
  const std::int64_t b = qkv.size(0), s = qkv.size(1), d = config_.head_dim;
  // A packed batch: the tokens of all its sequences in one row, heads per token.
  torch::Tensor heads = kv.pages ? qkv.view({b * s, local_heads_ + 2 * local_kv_heads_, d})
                                 : qkv.view({b, s, local_heads_ + 2 * local_kv_heads_, d});
  // One split (its backward one concatenation), as Megatron splits the fused QKV.
  const std::int64_t head_dim_index = kv.pages ? 1 : 2;
  std::vector<torch::Tensor> qkv_heads =
      heads.split_with_sizes({local_heads_, local_kv_heads_, local_kv_heads_}, head_dim_index);
  torch::Tensor& q = qkv_heads[0];
  torch::Tensor& k = qkv_heads[1];
  torch::Tensor& v = qkv_heads[2];
  if (config_.positions == TransformerConfig::Positions::rotary) {
    torch::fused::rotary_embedding_(q, k, config_.rotary_dim);
  }
  if (kv.pages) {
    // The new keys and values into their slots of the pool (vLLM's reshape_and_cache: a copy of
    // the batch's tokens), then attention over each sequence's pages.
    const std::int64_t tokens = b * s;
    kv.pages->keys.view({-1, local_kv_heads_, d}).narrow(0, 0, tokens).copy_(k);
    kv.pages->values.view({-1, local_kv_heads_, d}).narrow(0, 0, tokens).copy_(v);
    torch::Tensor a = torch::fused::paged_attention(q, kv.pages->keys, kv.pages->values, kv.batch->query_lens,
                                                    kv.batch->context_lens);
    return a.reshape({b, s, local_heads_ * d});
  }
  torch::Tensor keys, values;
  if (kv.cache) {
    kv.cache->keys.narrow(2, kv.past, s).copy_(k.transpose(1, 2));
    kv.cache->values.narrow(2, kv.past, s).copy_(v.transpose(1, 2));
    keys = kv.cache->keys.narrow(2, 0, kv.past + s);
    values = kv.cache->values.narrow(2, 0, kv.past + s);
  } else {
    keys = k.transpose(1, 2);
    values = v.transpose(1, 2);
  }
  const bool causal = s > 1;
  const double dropout = is_training() ? attention_dropout_ : 0.0;
  const auto core = [causal, dropout](const std::vector<torch::Tensor>& t) {
    return torch::scaled_dot_product_attention(t[0], t[1], t[2], {}, dropout, causal, std::nullopt, /*enable_gqa=*/true);
  };
  const std::vector<torch::Tensor> qkv_in{q.transpose(1, 2), keys, values};
  torch::Tensor a =
      checkpoint_core_attention_ && !kv.cache && is_training() ? parallel::checkpoint(core, qkv_in) : core(qkv_in);
  return a.transpose(1, 2).reshape({b, s, local_heads_ * d});
}

torch::Tensor TransformerBlockImpl::mlp(const torch::Tensor& x) {
  if (moe_) {
    const std::vector<std::int64_t> sizes = x.sizes();
    return moe_->forward(x.reshape({-1, config_.hidden})).view(sizes);
  }
  torch::Tensor h = up_->forward(x);
  h = config_.mlp == TransformerConfig::Mlp::swiglu ? torch::fused::silu_and_mul(h) : torch::gelu(h, "tanh");
  return down_->forward(h);
}

// Expert parallel (Megatron's sequence parallelism around an all-to-all MoE): the attention's
// partial outputs are reduce-scattered over the tokens instead of all-reduced (the tokens padded
// to a multiple of tp, as the collective needs), so each TP rank holds its share of them; the
// residual, the norm and the MoE run on the share's real tokens (padding is not routed); an
// all-gather gives every rank all the tokens again for the next block's attention.
torch::Tensor TransformerBlockImpl::forward_expert_parallel(const torch::Tensor& x, const AttentionKV& kv) {
  const parallel::ParallelState& st = parallel::state();
  const std::int64_t tokens = x.size(0) * x.size(1), hidden = config_.hidden;
  const std::int64_t share = (tokens + st.tp_size - 1) / st.tp_size;
  std::vector<std::int64_t> tokens_per_rank;
  for (int r = 0; r < st.tp_size; ++r) tokens_per_rank.push_back(std::clamp<std::int64_t>(tokens - r * share, 0, share));
  const std::int64_t mine = tokens_per_rank[static_cast<std::size_t>(st.tp_rank)];
  namespace F = torch::nn::functional;
  torch::Tensor partial = out_->forward_unreduced(attention_partial(norm_1_(x), kv)).reshape({tokens, hidden});
  if (tokens < share * st.tp_size) partial = F::pad(partial, {0, 0, 0, share * st.tp_size - tokens});
  torch::Tensor attended = parallel::reduce_scatter(partial, st.tp_group, 0);
  torch::Tensor h = x.reshape({tokens, hidden}).narrow(0, std::min(tokens, st.tp_rank * share), mine) +
                    attended.narrow(0, 0, mine);
  if (out_->bias.defined()) h = h + out_->bias;
  h = h + moe_->forward(norm_2_(h), tokens_per_rank);
  if (mine < share) h = F::pad(h, {0, 0, 0, share - mine});
  torch::Tensor all = parallel::all_gather(h, st.tp_group, 0);
  if (all.size(0) != tokens) all = all.narrow(0, 0, tokens);
  return all.view(x.sizes());
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, KVCache& cache, std::int64_t past) {
  const AttentionKV kv{&cache, past};
  if (moe_ && parallel::state().ep_size > 1) return forward_expert_parallel(x, kv);
  return block(x, kv);
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, PagedKVCache& pages, const PackedBatch& batch) {
  const AttentionKV kv{nullptr, 0, &pages, &batch};
  if (moe_ && parallel::state().ep_size > 1) return forward_expert_parallel(x, kv);
  return block(x, kv);
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  if (moe_ && parallel::state().ep_size > 1) {
    throw std::invalid_argument(fmt::format("{}: training with expert parallelism is not modelled yet", config_.name));
  }
  return block(x, AttentionKV{});
}

torch::Tensor TransformerBlockImpl::block(const torch::Tensor& x, const AttentionKV& kv) {
  // Hidden dropout on each branch before its residual add, in training only (Megatron's
  // bias-dropout-add): a kernel and a one-byte mask per element, a multiply in backward.
  const auto drop = [&](const torch::Tensor& t) { return torch::dropout(t, hidden_dropout_, is_training()); };
  if (config_.parallel_block) {
    torch::Tensor n = norm_1_(x);
    return x + drop(attention(n, kv)) + drop(mlp(n));
  }
  torch::Tensor h = x + drop(attention(norm_1_(x), kv));
  return h + drop(mlp(norm_2_(h)));
}

TransformerImpl::TransformerImpl(const TransformerConfig& c, double expert_skew, bool sequence_parallel)
    : CausalLM(c.architecture), config_(c), sequence_parallel_(sequence_parallel && parallel::state().tp_size > 1) {
  const parallel::ParallelState& st = parallel::state();
  const int stages = st.pp_size * st.vp_size;  // virtual stages (pp_size without interleaving)
  if (c.layers % stages != 0) {
    throw std::invalid_argument(
        fmt::format("{}: {} layers do not split evenly over {} pipeline stages", c.name, c.layers, stages));
  }
  // The vocabulary padded to a multiple of 128 x TP so that it splits evenly (Megatron, vLLM).
  const std::int64_t multiple = 128 * st.tp_size;
  padded_vocab_ = (c.vocab + multiple - 1) / multiple * multiple;
  // This chunk's layers: virtual stage vp_rank x pp + pp_rank of the model.
  const std::int64_t per_stage = c.layers / stages;
  first_layer_ = st.virtual_stage() * per_stage;
  if (st.is_first_stage()) {
    // Under sequence parallelism the embedding reduce-scatters to the sequence shards, unless
    // learned positions are added first (then the sum is split: Megatron's embedding).
    embed_tokens_ = register_module(
        "embed_tokens", parallel::VocabParallelEmbedding(padded_vocab_, c.hidden, st.tp_size, st.tp_rank,
                                                         sequence_parallel_ &&
                                                             c.positions != TransformerConfig::Positions::learned));
    if (c.positions == TransformerConfig::Positions::learned) {
      embed_positions_ = register_module("embed_positions", torch::nn::Embedding(c.context, c.hidden));
    }
  }
  for (std::int64_t i = 0; i < per_stage; ++i) {
    blocks_.push_back(register_module(fmt::format("layers_{}", first_layer_ + i),
                                      TransformerBlock(c, st.tp_size, st.tp_rank, expert_skew, sequence_parallel_)));
  }
  if (st.is_last_stage()) {
    norm_ = NormLayer(*this, "norm", c);
    // A tied head reads the embedding's weight on a single stage; on a separate last stage it is
    // its own copy, as in Megatron.
    if (!c.tie_embeddings || !st.is_first_stage() || c.head_bias) {
      head_ = register_module("lm_head", parallel::ColumnParallelLinear(c.hidden, padded_vocab_, st.tp_size,
                                                                        st.tp_rank, true, c.head_bias,
                                                                        sequence_parallel_));
    }
  }
}

std::vector<KVCache> TransformerImpl::make_kv_cache(std::int64_t batch, std::int64_t max_seq) const {
  torch::MemoryUseGuard guard(torch::MemoryUse::kv_cache);
  std::vector<KVCache> caches;
  const std::int64_t kv_heads = config_.local_kv_heads(parallel::state().tp_size);
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    KVCache c;
    c.keys = torch::empty({batch, kv_heads, max_seq, config_.head_dim}, torch::get_default_dtype());
    c.values = torch::empty({batch, kv_heads, max_seq, config_.head_dim}, torch::get_default_dtype());
    caches.push_back(std::move(c));
  }
  return caches;
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& tokens, std::int64_t past) {
  if (!embed_positions_) return embed_tokens_->forward(tokens);
  const torch::Tensor positions = torch::arange(past, past + tokens.size(1));
  // The two lookups in this order (an operator's operands are evaluated in no set order).
  const torch::Tensor words = embed_tokens_->forward(tokens);
  return words + embed_positions_->forward(positions);
}

torch::Tensor TransformerImpl::blocks(torch::Tensor x, std::vector<KVCache>& caches, std::int64_t past) {
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    torch::RecordScope layer(fmt::format("layer {}", first_layer_ + static_cast<std::int64_t>(i)));
    x = blocks_[i]->forward(x, caches[i], past);
  }
  return x;
}

torch::Tensor TransformerImpl::next_token(const torch::Tensor& x) {
  torch::Tensor last = x.narrow(1, x.size(1) - 1, 1);  // [b, 1, hidden]
  torch::Tensor h = norm_(last);
  torch::Tensor logits = head_ ? head_->forward(h)
                               : [&] {
                                   // Tied head: the vocabulary-parallel embedding's weight, then gathered.
                                   torch::Tensor local = torch::nn::functional::linear(h, embed_tokens_->weight);
                                   return parallel::all_gather(local, parallel::state().tp_group, -1);
                                 }();
  return logits.argmax(-1);  // [b, 1]
}

std::vector<PagedKVCache> TransformerImpl::make_paged_kv_cache(std::int64_t pages, std::int64_t page_tokens) const {
  torch::MemoryUseGuard guard(torch::MemoryUse::kv_cache);
  std::vector<PagedKVCache> caches;
  const std::int64_t kv_heads = config_.local_kv_heads(parallel::state().tp_size);
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    PagedKVCache c;
    c.keys = torch::empty({pages, page_tokens, kv_heads, config_.head_dim}, torch::get_default_dtype());
    c.values = torch::empty({pages, page_tokens, kv_heads, config_.head_dim}, torch::get_default_dtype());
    caches.push_back(std::move(c));
  }
  return caches;
}

double TransformerImpl::kv_bytes_per_token(double element_bytes) const {
  const std::int64_t kv_heads = config_.local_kv_heads(parallel::state().tp_size);
  return 2.0 * static_cast<double>(blocks_.size() * kv_heads * config_.head_dim) * element_bytes;
}

AttentionShape TransformerImpl::attention_shape() const {
  const int tp = parallel::state().tp_size;
  return {config_.heads / tp, config_.local_kv_heads(tp), config_.head_dim, static_cast<std::int64_t>(blocks_.size())};
}

torch::Tensor TransformerImpl::blocks_packed(torch::Tensor x, std::vector<PagedKVCache>& caches,
                                             const PackedBatch& batch) {
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    torch::RecordScope layer(fmt::format("layer {}", first_layer_ + static_cast<std::int64_t>(i)));
    x = blocks_[i]->forward(x, caches[i], batch);
  }
  return x;
}

torch::Tensor TransformerImpl::sample_packed(const torch::Tensor& x, std::int64_t rows) {
  // The rows of the sampling sequences' last tokens (their indices come from the host).
  const torch::Tensor indices = torch::empty({rows}, torch::kInt64);
  return next_token(torch::index_select(x, 1, indices).view({rows, 1, config_.hidden}));
}

torch::Tensor TransformerImpl::forward_train(const torch::Tensor& input) {
  const parallel::ParallelState& st = parallel::state();
  torch::Tensor x;
  if (st.is_first_stage()) {
    // A layer's parameters may still be gathering (the distributed optimizer's overlapped gather):
    // each waits before it runs, as Megatron's forward pre-hooks do.
    if (embed_positions_) parallel::wait_for_parameters(*embed_positions_);
    x = embed(input, 0);
    if (sequence_parallel_ && embed_positions_) x = parallel::scatter_to_sequence_parallel_region(x, 1);
  } else {
    x = input;
  }
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    torch::RecordScope layer(fmt::format("layer {}", first_layer_ + static_cast<std::int64_t>(i)));
    TransformerBlock& block = blocks_[i];
    parallel::wait_for_parameters(*block);
    if (recompute_ == Recompute::full) {
      x = parallel::checkpoint([block](const torch::Tensor& in) { return block->forward(in); }, x);
    } else {
      x = block->forward(x);
    }
  }
  if (!st.is_last_stage()) return x;
  parallel::wait_for_parameters(norm_.module());
  torch::Tensor h = norm_(x);
  // The output layer: this rank's vocabulary columns, the input gathered over the sequence.
  return head_ ? head_->forward_local(h)
               : parallel::column_parallel_linear(h, embed_tokens_->weight, torch::Tensor(), sequence_parallel_);
}

void TransformerImpl::set_recompute(Recompute recompute) {
  recompute_ = recompute;
  for (TransformerBlock& b : blocks_) b->set_checkpoint_core_attention(recompute == Recompute::selective);
}

void TransformerImpl::set_hidden_dropout(double p) {
  for (TransformerBlock& b : blocks_) b->set_hidden_dropout(p);
}

void TransformerImpl::set_attention_dropout(double p) {
  for (TransformerBlock& b : blocks_) b->set_attention_dropout(p);
}

torch::Tensor TransformerImpl::loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::mean(parallel::vocab_parallel_cross_entropy(logits, labels));
}

}  // namespace syntorch::models
