// Backward kernels: allocate the gradients and launch the runtime's backward op kinds.

#include "backward_ops.hpp"

#include "internal.hpp"

namespace syntorch::torch::detail {

using runtime::OpDesc;
using runtime::OpKind;

Tensor elementwise_backward(OpKind kind, const Tensor& grad, const Tensor& saved, std::string_view aten) {
  const TensorImpl& g = impl_of(grad);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = make_tensor(ctx, g.sizes, impl_of(saved).dtype, g.device, aten);
  dispatch(ctx, elementwise_op(kind, g.numel, impl_of(saved).dtype), aten, g.device, g.numel == 0);
  return out;
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, std::int64_t dim, ScalarType dtype,
                        std::string_view aten) {
  const TensorImpl& y = impl_of(output);
  const std::int64_t cols = y.sizes.empty() ? 1 : y.sizes[static_cast<std::size_t>(dim)];
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = make_tensor(ctx, y.sizes, dtype, y.device, aten);
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::softmax_backward;
    o.dtype = to_runtime_dtype(y.dtype);
    o.cols = static_cast<std::uint64_t>(cols);
    o.rows = cols == 0 ? 0 : static_cast<std::uint64_t>(y.numel / cols);
    dispatch(ctx, o, aten, y.device, y.numel == 0);
  }
  (void)grad;
  return out;
}

std::tuple<Tensor, Tensor, Tensor> norm_backward(OpKind kind, const Tensor& grad, const Tensor& input,
                                                 const Tensor& weight, const Tensor& bias, std::int64_t normalized,
                                                 std::array<bool, 3> output_mask, std::string_view aten) {
  const TensorImpl& x = impl_of(input);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor dx = output_mask[0] ? make_tensor(ctx, x.sizes, x.dtype, x.device, aten) : Tensor();
  Tensor dw = weight.defined() && output_mask[1] ? make_tensor(ctx, weight.sizes(), weight.dtype(), x.device, aten)
                                                  : Tensor();
  Tensor db = bias.defined() && output_mask[2] ? make_tensor(ctx, bias.sizes(), bias.dtype(), x.device, aten) : Tensor();
  if (ctx) {
    OpDesc o;
    o.kind = kind == OpKind::layernorm ? OpKind::layernorm_backward : OpKind::rmsnorm_backward;
    o.dtype = to_runtime_dtype(x.dtype);
    o.cols = static_cast<std::uint64_t>(normalized);
    o.rows = normalized == 0 ? 0 : static_cast<std::uint64_t>(x.numel / normalized);
    dispatch(ctx, o, aten, x.device, x.numel == 0);
  }
  (void)grad;
  return {std::move(dx), std::move(dw), std::move(db)};
}

std::tuple<Tensor, Tensor, Tensor> attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                      const Tensor& v, bool causal, bool dropout,
                                                      std::uint8_t sdp_backends) {
  constexpr std::string_view aten = "aten::_scaled_dot_product_flash_attention_backward";
  const TensorImpl& qi = impl_of(q);
  const TensorImpl& ki = impl_of(k);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor dq = make_tensor(ctx, qi.sizes, qi.dtype, qi.device, aten);
  Tensor dk = make_tensor(ctx, ki.sizes, ki.dtype, ki.device, aten);
  Tensor dv = make_tensor(ctx, impl_of(v).sizes, ki.dtype, ki.device, aten);
  if (ctx) {
    const std::size_t n = qi.sizes.size();
    OpDesc o;
    o.kind = OpKind::attention_backward;
    o.dtype = to_runtime_dtype(qi.dtype);
    o.batch = static_cast<std::uint64_t>(product(IntArrayRef(qi.sizes.data(), n - 3)));
    o.heads = static_cast<std::uint64_t>(qi.sizes[n - 3]);
    o.seq_q = static_cast<std::uint64_t>(qi.sizes[n - 2]);
    o.head_dim = static_cast<std::uint64_t>(qi.sizes[n - 1]);
    o.kv_heads = static_cast<std::uint64_t>(ki.sizes[n - 3]);
    o.seq_kv = static_cast<std::uint64_t>(ki.sizes[n - 2]);
    o.causal = causal;
    o.dropout = dropout;
    o.sdp_backends = sdp_backends;
    const bool empty = qi.numel == 0 || ki.numel == 0;
    // The kernels' own memory while they run (unfused: dP and dS).
    const std::uint64_t transient_bytes = empty || !qi.device.is_cuda() ? 0 : ctx->op_memory(o).workspace_bytes;
    Tensor workspace;
    if (transient_bytes > 0) {
      workspace = make_tensor(ctx, {static_cast<std::int64_t>(transient_bytes)}, ScalarType::Bool, qi.device,
                              "aten::_scaled_dot_product_attention_backward workspace");
    }
    dispatch(ctx, o, aten, qi.device, empty);
  }
  (void)grad;
  return {std::move(dq), std::move(dk), std::move(dv)};
}

Tensor embedding_backward(const Tensor& grad, std::int64_t vocab) {
  constexpr std::string_view aten = "aten::embedding_dense_backward";
  const TensorImpl& g = impl_of(grad);
  const std::int64_t cols = g.sizes.empty() ? 1 : g.sizes.back();
  runtime::RankContext* ctx = runtime::current_rank();
  const std::int64_t table[2] = {vocab, cols};
  Tensor out = make_tensor(ctx, IntArrayRef(table, 2), g.dtype, g.device, aten);
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::embedding_backward;
    o.dtype = to_runtime_dtype(g.dtype);
    o.rows = cols == 0 ? 0 : static_cast<std::uint64_t>(g.numel / cols);
    o.cols = static_cast<std::uint64_t>(cols);
    o.vocab = static_cast<std::uint64_t>(vocab);
    dispatch(ctx, o, aten, g.device, o.rows == 0 || o.cols == 0 || o.vocab == 0);
  }
  return out;
}

Tensor swiglu_backward(const Tensor& grad, const Tensor& input) {
  constexpr std::string_view aten = "syntorch::silu_and_mul_backward";
  const TensorImpl& x = impl_of(input);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = make_tensor(ctx, x.sizes, x.dtype, x.device, aten);
  const std::int64_t n = impl_of(grad).numel;
  dispatch(ctx, elementwise_op(OpKind::swiglu_backward, n, x.dtype), aten, x.device, n == 0);
  return out;
}

Tensor nll_loss_backward(const Tensor& grad, IntArrayRef input_sizes) {
  Tensor out = zeros(input_sizes, TensorOptions(grad.dtype()).device(grad.device()));
  const std::int64_t rows = input_sizes.empty() ? 1 : input_sizes[0];
  dispatch(runtime::current_rank(), elementwise_op(OpKind::copy, rows, grad.dtype()), "aten::nll_loss_backward",
           grad.device(), rows == 0);
  return out;
}

Tensor reduction(std::int64_t inputs, ScalarType dtype, Device device, IntArrayRef out_sizes, std::string_view aten) {
  const std::int64_t kept = product(out_sizes);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = make_tensor(ctx, out_sizes, dtype, device, aten);
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::sum;
    o.dtype = to_runtime_dtype(dtype);
    o.rows = static_cast<std::uint64_t>(kept);
    o.cols = kept == 0 ? 0 : static_cast<std::uint64_t>(inputs / kept);
    dispatch(ctx, o, aten, device, inputs == 0 || kept == 0);
  }
  return out;
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  const TensorImpl& g = impl_of(grad);
  if (IntArrayRef(g.sizes) == sizes) return grad;
  return reduction(g.numel, g.dtype, g.device, sizes, "aten::sum");
}

}  // namespace syntorch::torch::detail
