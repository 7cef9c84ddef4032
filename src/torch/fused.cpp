#include "syntorch/torch/fused.hpp"

#include "internal.hpp"

namespace syntorch::torch::fused {

using detail::fail;
using detail::impl_of;
using runtime::OpDesc;
using runtime::OpKind;

Tensor silu_and_mul(const Tensor& x) {
  detail::check_defined(x, "silu_and_mul", "input");
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
  return out;
}

void rotary_embedding_(const Tensor& query, const Tensor& key, std::int64_t rotary_dim) {
  const char* op = "rotary_embedding_";
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
  detail::dispatch(runtime::current_rank(), o, "syntorch::rotary_embedding", q.device,
                   tokens == 0 || o.heads == 0 || o.kv_heads == 0);
}

}  // namespace syntorch::torch::fused
