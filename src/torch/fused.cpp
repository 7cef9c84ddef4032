#include "syntorch/torch/fused.hpp"

#include <algorithm>
#include <numeric>

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch::fused {

using detail::fail;
using detail::impl_of;
using runtime::OpDesc;
using runtime::OpKind;

Tensor silu_and_mul(const Tensor& x) {
  detail::check_defined(x, "silu_and_mul", "input");
  RecordOpScope scope;
  const auto& s = impl_of(x);
  if (s.sizes.empty() || s.sizes.back() % 2 != 0) {
    fail("silu_and_mul: expected the last dim to hold gate and up halves (an even size), got input of size {}",
         format_sizes(s.sizes));
  }
  detail::Sizes out_sizes = s.sizes;
  out_sizes.back() /= 2;
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, out_sizes, s.dtype, s.device, "syntorch::silu_and_mul");
  const std::int64_t n = s.numel / 2;
  detail::dispatch(ctx, detail::elementwise_op(OpKind::swiglu, n, s.dtype), "syntorch::silu_and_mul", s.device, n == 0);
  if (autograd::any_requires_grad({&x})) {
    autograd::record("SiluAndMulBackward", {&x}, {&out}, {x},
                   [](detail::Grads& g, detail::Grads& sv, const autograd::Node&) {
                     return detail::Grads{detail::swiglu_backward(g[0], sv[0])};
                   });
  }
  if (scope.recording()) record_op("syntorch.silu_and_mul.default", {RecordedArg::of(x)}, {out});
  return out;
}

void rotary_embedding_(Tensor& query, Tensor& key, std::int64_t rotary_dim) {
  const char* op = "rotary_embedding_";
  RecordOpScope scope;
  if (scope.recording() && query.defined() && key.defined()) {  // in place: query and key are its outputs
    record_op("syntorch.rotary_embedding_.default",
              {RecordedArg::of(query), RecordedArg::of(key), RecordedArg::of(rotary_dim)}, {query, key});
  }
  detail::check_defined(query, op, "query");
  detail::check_defined(key, op, "key");
  detail::check_same(query, key, op);
  const auto& q = impl_of(query);
  const auto& k = impl_of(key);
  if (q.dtype != k.dtype) {
    fail("{}: expected query and key of one dtype, got {} and {}", op, scalar_type_name(q.dtype),
         scalar_type_name(k.dtype));
  }
  const std::size_t n = q.sizes.size();
  if (n < 2 || k.sizes.size() != n || !std::equal(q.sizes.begin(), q.sizes.end() - 2, k.sizes.begin())) {
    fail("{}: expected query [..., heads, head_dim] and key [..., kv_heads, head_dim] with the same leading dims, got "
         "query {} and key {}",
         op, format_sizes(q.sizes), format_sizes(k.sizes));
  }
  const std::int64_t head_dim = q.sizes[n - 1];
  if (k.sizes[n - 1] != head_dim) {
    fail("{}: query and key must have the same head dim, got query {} and key {}", op, format_sizes(q.sizes),
         format_sizes(k.sizes));
  }
  if (rotary_dim <= 0 || rotary_dim > head_dim || rotary_dim % 2 != 0) {
    fail("{}: rotary_dim must be even and in [2, head_dim = {}], got {}", op, head_dim, rotary_dim);
  }
  std::int64_t tokens = 1;
  for (std::size_t i = 0; i + 2 < n; ++i) tokens *= q.sizes[i];
  OpDesc o;
  o.kind = OpKind::rope;
  o.dtype = to_runtime_dtype(q.dtype);
  o.rows = static_cast<std::uint64_t>(tokens);
  o.heads = static_cast<std::uint64_t>(q.sizes[n - 2]);
  o.kv_heads = static_cast<std::uint64_t>(k.sizes[n - 2]);
  o.head_dim = static_cast<std::uint64_t>(head_dim);
  o.cols = static_cast<std::uint64_t>(rotary_dim);
  const bool empty = tokens == 0 || o.heads == 0 || o.kv_heads == 0;
  detail::dispatch(runtime::current_rank(), o, "syntorch::rotary_embedding", q.device, empty);
  if (autograd::any_requires_grad({&query, &key})) {
    if (autograd::GradMode::is_enabled() && ((query.requires_grad() && query.is_leaf()) ||
                                             (key.requires_grad() && key.is_leaf()))) {
      fail("{}: a leaf Variable that requires grad is being used in an in-place operation.", op);
    }
    // The rotation's transpose: the same kernel over the gradients of query and key.
    const ScalarType dtype = q.dtype;
    const Device device = q.device;
    autograd::record("RotaryEmbeddingBackward", {&query, &key}, {&query, &key}, {},
                   [o, dtype, device, empty](detail::Grads& g, detail::Grads&, const autograd::Node&) {
                     detail::Grads out{g[0], g[1]};
                     if (!out[0].defined() && !out[1].defined()) return out;
                     // A gradient that did not arrive is zero, and stays so under rotation.
                     runtime::RankContext* ctx = runtime::current_rank();
                     detail::dispatch(ctx, o, "syntorch::rotary_embedding_backward", device, empty);
                     (void)dtype;
                     return out;
                   });
  }
}

Tensor paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                       const std::vector<std::int64_t>& query_lens, const std::vector<std::int64_t>& context_lens) {
  const char* op = "paged_attention";
  detail::check_defined(query, op, "query");
  detail::check_defined(key_cache, op, "key_cache");
  detail::check_defined(value_cache, op, "value_cache");
  detail::no_backward({&query, &key_cache, &value_cache}, op);
  detail::check_same_device(query, key_cache, op);
  detail::check_same_device(query, value_cache, op);
  const auto& q = impl_of(query);
  const auto& k = impl_of(key_cache);
  const auto& v = impl_of(value_cache);
  if (q.sizes.size() != 3) fail("{}: expected query [tokens, heads, head_dim], got {}", op, format_sizes(q.sizes));
  if (k.sizes.size() != 4 || k.sizes != v.sizes) {
    fail("{}: expected key_cache and value_cache of one size [pages, page_tokens, kv_heads, head_dim], got {} and {}",
         op, format_sizes(k.sizes), format_sizes(v.sizes));
  }
  if (k.dtype != v.dtype || (k.dtype != q.dtype && k.dtype != ScalarType::Float8_e4m3fn)) {
    fail("{}: expected a KV pool in the query's dtype or fp8 (float8_e4m3fn), got key_cache {} and value_cache {} for "
         "a {} query",
         op, scalar_type_name(k.dtype), scalar_type_name(v.dtype), scalar_type_name(q.dtype));
  }
  const std::int64_t tokens = q.sizes[0], heads = q.sizes[1], head_dim = q.sizes[2];
  const std::int64_t pages = k.sizes[0], page_tokens = k.sizes[1], kv_heads = k.sizes[2];
  if (k.sizes[3] != head_dim) {
    fail("{}: query and the KV pool must have the same head dim, got query {} and key_cache {}", op,
         format_sizes(q.sizes), format_sizes(k.sizes));
  }
  if (kv_heads == 0 || heads % kv_heads != 0) {
    fail("{}: query heads ({}) must be a multiple of the KV pool's heads ({})", op, heads, kv_heads);
  }
  if (query_lens.size() != context_lens.size() || query_lens.empty()) {
    fail("{}: expected one query length and one context length per sequence, got {} and {}", op, query_lens.size(),
         context_lens.size());
  }
  // Each sequence's context fits the pool (sequences may share pages: a prefix cache's).
  std::int64_t q_sum = 0, kv_sum = 0;
  for (std::size_t i = 0; i < query_lens.size(); ++i) {
    if (query_lens[i] < 1 || query_lens[i] > context_lens[i]) {
      fail("{}: sequence {} has {} new tokens and a context of {}: expected at least one new token, and no more than "
           "its context",
           op, i, query_lens[i], context_lens[i]);
    }
    const std::int64_t pages_needed = (context_lens[i] + page_tokens - 1) / std::max<std::int64_t>(page_tokens, 1);
    if (pages_needed > pages) {
      fail("{}: sequence {}'s context of {} tokens needs {} pages of {}; the KV pool has {}", op, i, context_lens[i],
           pages_needed, page_tokens, pages);
    }
    q_sum += query_lens[i];
    kv_sum += context_lens[i];
  }
  if (q_sum != tokens) fail("{}: the query lengths sum to {}, but query holds {} tokens", op, q_sum, tokens);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, q.sizes, q.dtype, q.device, "syntorch::paged_attention");
  runtime::PagedAttentionShape shape;
  shape.heads = static_cast<std::uint64_t>(heads);
  shape.kv_heads = static_cast<std::uint64_t>(kv_heads);
  shape.head_dim = static_cast<std::uint64_t>(head_dim);
  shape.page_tokens = static_cast<std::uint64_t>(page_tokens);
  shape.dtype = to_runtime_dtype(q.dtype);
  if (k.dtype != q.dtype) shape.kv_dtype = to_runtime_dtype(k.dtype);
  const OpDesc o = runtime::paged_attention_desc(shape, query_lens, context_lens);
  detail::dispatch(ctx, o, "syntorch::paged_attention", q.device, tokens == 0 || heads == 0 || head_dim == 0);
  return out;
}

namespace {
// A 2-D tensor's rows and columns; throws naming the op and argument otherwise.
std::pair<std::int64_t, std::int64_t> matrix_of(const Tensor& t, const char* op, const char* arg, const char* layout) {
  detail::check_defined(t, op, arg);
  const auto& s = impl_of(t);
  if (s.sizes.size() != 2) fail("{}: expected {} {}, got a tensor of size {}", op, arg, layout, format_sizes(s.sizes));
  return {s.sizes[0], s.sizes[1]};
}

OpDesc moe_rows_op(OpKind kind, std::int64_t tokens, std::int64_t dim, std::int64_t k, ScalarType dtype) {
  OpDesc o;
  o.kind = kind;
  o.dtype = to_runtime_dtype(dtype);
  o.rows = static_cast<std::uint64_t>(tokens);
  o.cols = static_cast<std::uint64_t>(dim);
  o.k = static_cast<std::uint64_t>(k);
  return o;
}
}  // namespace

std::tuple<Tensor, Tensor> topk_softmax_unrecorded(const Tensor& gating_output, std::int64_t k) {
  detail::no_backward({&gating_output}, "topk_softmax");
  const char* op = "topk_softmax";
  const auto [tokens, experts] = matrix_of(gating_output, op, "gating_output", "[tokens, experts]");
  if (k < 1 || k > experts) fail("{}: k ({}) must be in [1, experts = {}]", op, k, experts);
  const auto& g = impl_of(gating_output);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor weights = detail::make_tensor(ctx, {tokens, k}, kFloat32, g.device, "syntorch::topk_softmax");
  Tensor ids = detail::make_tensor(ctx, {tokens, k}, kInt32, g.device, "syntorch::topk_softmax");
  OpDesc o = moe_rows_op(OpKind::topk, tokens, experts, k, g.dtype);
  detail::dispatch(ctx, o, "syntorch::topk_softmax", g.device, tokens == 0);
  return {std::move(weights), std::move(ids)};
}

std::tuple<Tensor, Tensor> topk_softmax(const Tensor& gating_output, std::int64_t k) {
  RecordOpScope scope;
  auto [weights, ids] = topk_softmax_unrecorded(gating_output, k);
  if (scope.recording()) {
    record_op("syntorch.topk_softmax.default", {RecordedArg::of(gating_output), RecordedArg::of(k)}, {weights, ids});
  }
  return {weights, ids};
}

Tensor moe_permute_unrecorded(const Tensor& hidden, const Tensor& expert_ids) {
  detail::no_backward({&hidden}, "moe_permute");
  const char* op = "moe_permute";
  const auto [tokens, dim] = matrix_of(hidden, op, "hidden", "[tokens, dim]");
  const auto [id_rows, k] = matrix_of(expert_ids, op, "expert_ids", "[tokens, k]");
  if (id_rows != tokens) fail("{}: expert_ids has {} rows for {} tokens", op, id_rows, tokens);
  if (k < 1) fail("{}: expert_ids must choose at least one expert per token, got k = {}", op, k);
  const auto& h = impl_of(hidden);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, {tokens * k, dim}, h.dtype, h.device, "syntorch::moe_permute");
  detail::dispatch(ctx, moe_rows_op(OpKind::moe_permute, tokens, dim, k, h.dtype), "syntorch::moe_permute", h.device,
                   tokens * dim == 0);
  return out;
}

Tensor moe_permute(const Tensor& hidden, const Tensor& expert_ids) {
  RecordOpScope scope;
  Tensor out = moe_permute_unrecorded(hidden, expert_ids);
  if (scope.recording()) {
    record_op("syntorch.moe_permute.default", {RecordedArg::of(hidden), RecordedArg::of(expert_ids)}, {out});
  }
  return out;
}

Tensor moe_unpermute_unrecorded(const Tensor& expert_output, const Tensor& routing_weights) {
  detail::no_backward({&expert_output, &routing_weights}, "moe_unpermute");
  const char* op = "moe_unpermute";
  const auto [rows, dim] = matrix_of(expert_output, op, "expert_output", "[tokens x k, dim]");
  const auto [tokens, k] = matrix_of(routing_weights, op, "routing_weights", "[tokens, k]");
  if (k < 1 || rows != tokens * k) {
    fail("{}: expert_output has {} rows; routing_weights of size [{}, {}] expects {}", op, rows, tokens, k, tokens * k);
  }
  const auto& e = impl_of(expert_output);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, {tokens, dim}, e.dtype, e.device, "syntorch::moe_unpermute");
  detail::dispatch(ctx, moe_rows_op(OpKind::moe_unpermute, tokens, dim, k, e.dtype), "syntorch::moe_unpermute",
                   e.device, tokens * dim == 0);
  return out;
}

Tensor moe_unpermute(const Tensor& expert_output, const Tensor& routing_weights) {
  RecordOpScope scope;
  Tensor out = moe_unpermute_unrecorded(expert_output, routing_weights);
  if (scope.recording()) {
    record_op("syntorch.moe_unpermute.default", {RecordedArg::of(expert_output), RecordedArg::of(routing_weights)},
              {out});
  }
  return out;
}

Tensor grouped_mm_unrecorded(const Tensor& input, const Tensor& weight, const std::vector<std::int64_t>& group_rows) {
  detail::no_backward({&input, &weight}, "grouped_mm");
  const char* op = "grouped_mm";
  detail::check_defined(input, op, "input");
  detail::check_defined(weight, op, "weight");
  const auto& w = impl_of(weight);
  if (w.sizes.size() != 3) fail("{}: expected weight [groups, out, in], got a tensor of size {}", op, format_sizes(w.sizes));
  // An fp8 weight under fp8 autocast: the input quantised first, the output in its dtype.
  Tensor quantised;
  ScalarType out_dtype = impl_of(input).dtype;
  if (w.dtype == kFloat8_e4m3fn && out_dtype != kFloat8_e4m3fn && fp8::autocast_enabled()) {
    quantised = input.to(kFloat8_e4m3fn);
  }
  const Tensor& x_t = quantised.defined() ? quantised : input;
  const auto [rows, in] = matrix_of(x_t, op, "input", "[rows, in]");
  const auto& x = impl_of(x_t);
  detail::check_same(x_t, weight, op);
  const std::int64_t groups = w.sizes[0], out_features = w.sizes[1];
  if (w.sizes[2] != in) fail("{}: input [{}, {}] does not match weight {} (in = {})", op, rows, in, format_sizes(w.sizes), w.sizes[2]);
  if (static_cast<std::int64_t>(group_rows.size()) != groups) {
    fail("{}: {} group sizes for a weight of {} groups", op, group_rows.size(), groups);
  }
  for (std::int64_t r : group_rows) {
    if (r < 0) fail("{}: group sizes must not be negative, got {}", op, r);
  }
  const std::int64_t total = std::accumulate(group_rows.begin(), group_rows.end(), std::int64_t{0});
  if (total != rows) fail("{}: group sizes sum to {} but the input has {} rows", op, total, rows);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, {rows, out_features}, out_dtype, x.device, "syntorch::grouped_mm");
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::grouped_gemm;
    o.dtype = to_runtime_dtype(x.dtype);
    o.batch = static_cast<std::uint64_t>(groups);
    o.m = static_cast<std::uint64_t>(rows);
    o.n = static_cast<std::uint64_t>(out_features);
    o.k = static_cast<std::uint64_t>(in);
    const bool even = std::all_of(group_rows.begin(), group_rows.end(), [&](std::int64_t r) { return r == group_rows[0]; });
    if (!even) o.splits.assign(group_rows.begin(), group_rows.end());
    detail::dispatch(ctx, o, "syntorch::grouped_mm", x.device, rows == 0 || out_features == 0);
  }
  return out;
}

Tensor grouped_mm(const Tensor& input, const Tensor& weight, const std::vector<std::int64_t>& group_rows) {
  RecordOpScope scope;
  Tensor out = grouped_mm_unrecorded(input, weight, group_rows);
  if (scope.recording()) {
    record_op("syntorch.grouped_mm.default",
              {RecordedArg::of(input), RecordedArg::of(weight), RecordedArg::of(IntArrayRef(group_rows))}, {out});
  }
  return out;
}

}  // namespace syntorch::torch::fused
