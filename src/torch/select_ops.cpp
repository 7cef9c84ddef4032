// Comparisons, selection and masking, and sampling: the ops generation loops and attention masks
// written by hand use (lt, where, masked_fill, tril, multinomial). Each is one elementwise or
// row-wise kernel; comparisons and sampling have no gradient, as in PyTorch.

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch {

using detail::fail;
using detail::Grads;
using detail::impl_of;
using detail::Sizes;
using runtime::OpKind;
using Node = autograd::Node;

namespace {

// A new tensor of `sizes` from one elementwise kernel of `kind` costed at `cost_dtype`.
Tensor elementwise(IntArrayRef sizes, ScalarType out_dtype, ScalarType cost_dtype, Device device, OpKind kind,
                   std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, sizes, out_dtype, device, aten);
  const std::int64_t n = impl_of(out).numel;
  detail::dispatch(ctx, detail::elementwise_op(kind, n, cost_dtype), aten, device, n == 0);
  return out;
}

Tensor compare(const Tensor& a, const Tensor& b, const char* op, std::string_view aten) {
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  detail::check_same_device(a, b, op);
  const ScalarType type = detail::result_type(a, b, op);
  const Sizes sizes = broadcast_shapes(a.sizes(), b.sizes());
  return elementwise(sizes, kBool, type, a.device(), OpKind::sub, aten);
}

Tensor compare_scalar(const Tensor& a, const char* op, std::string_view aten) {
  detail::check_defined(a, op, "self");
  return elementwise(a.sizes(), kBool, a.dtype(), a.device(), OpKind::sub, aten);
}

void check_mask(const Tensor& mask, const char* op) {
  detail::check_defined(mask, op, "mask");
  if (mask.dtype() != kBool) {
    fail("{}: expected a mask of dtype Bool, got {}", op, scalar_type_name(mask.dtype()));
  }
}

// The gradient through a mask: one kernel over the gradient, summed back to `sizes`.
Tensor masked_grad(const Tensor& g, IntArrayRef sizes, std::string_view aten) {
  Tensor out = elementwise(g.sizes(), g.dtype(), g.dtype(), g.device(), OpKind::mul, aten);
  return detail::sum_to(out, sizes);
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "eq", "aten::eq");
  if (scope.recording()) record_op("aten.eq.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor ne(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "ne", "aten::ne");
  if (scope.recording()) record_op("aten.ne.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor lt(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "lt", "aten::lt");
  if (scope.recording()) record_op("aten.lt.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor le(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "le", "aten::le");
  if (scope.recording()) record_op("aten.le.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor gt(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "gt", "aten::gt");
  if (scope.recording()) record_op("aten.gt.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor ge(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = compare(a, b, "ge", "aten::ge");
  if (scope.recording()) record_op("aten.ge.Tensor", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}
Tensor eq(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "eq", "aten::eq");
  if (scope.recording()) record_op("aten.eq.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}
Tensor ne(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "ne", "aten::ne");
  if (scope.recording()) record_op("aten.ne.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}
Tensor lt(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "lt", "aten::lt");
  if (scope.recording()) record_op("aten.lt.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}
Tensor le(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "le", "aten::le");
  if (scope.recording()) record_op("aten.le.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}
Tensor gt(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "gt", "aten::gt");
  if (scope.recording()) record_op("aten.gt.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}
Tensor ge(const Tensor& a, double b) {
  RecordOpScope scope;
  Tensor out = compare_scalar(a, "ge", "aten::ge");
  if (scope.recording()) record_op("aten.ge.Scalar", {RecordedArg::of(a), RecordedArg::of_real(b)}, {out});
  return out;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  const char* op = "where";
  check_mask(condition, op);
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  detail::check_same_device(a, b, op);
  detail::check_same_device(condition, a, op);
  const ScalarType type = detail::result_type(a, b, op);
  const Sizes sizes = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes()), b.sizes());
  Tensor out = elementwise(sizes, type, type, a.device(), OpKind::add, "aten::where");
  if (autograd::any_requires_grad({&a, &b})) {
    Sizes sa = a.sizes(), sb = b.sizes();
    autograd::record("WhereBackward0", {&a, &b}, {&out}, {condition}, [sa, sb](Grads& g, Grads&, const Node& n) {
      return Grads{n.needs_input_grad(0) ? masked_grad(g[0], sa, "aten::where") : Tensor(),
                   n.needs_input_grad(1) ? masked_grad(g[0], sb, "aten::where") : Tensor()};
    });
  }
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  const char* op = "masked_fill";
  RecordOpScope scope;
  detail::check_defined(x, op, "self");
  check_mask(mask, op);
  detail::check_same_device(x, mask, op);
  // As ATen: the input (broadcast with the mask) copied, then filled in place: two kernels.
  const Sizes sizes = broadcast_shapes(x.sizes(), mask.sizes());
  Tensor out = elementwise(sizes, x.dtype(), x.dtype(), x.device(), OpKind::copy, "aten::masked_fill");
  {
    const auto& o = impl_of(out);
    detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::mul, o.numel, o.dtype),
                     "aten::masked_fill_", o.device, o.numel == 0);
  }
  if (autograd::any_requires_grad({&x})) {
    Sizes sx = x.sizes();
    // As ATen's derivative: the gradient masked_fill'ed with zeros (its copy and fill again).
    autograd::record("MaskedFillBackward0", {&x}, {&out}, {mask}, [sx](Grads& g, Grads& saved, const Node&) {
      return Grads{detail::sum_to(masked_fill(g[0], saved[0], 0.0), sx)};
    });
  }
  if (scope.recording()) {
    record_op("aten.masked_fill.Scalar", {RecordedArg::of(x), RecordedArg::of(mask), RecordedArg::of_real(value)}, {out});
  }
  return out;
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, double) {
  const char* op = "masked_fill_";
  detail::check_defined(x, op, "self");
  check_mask(mask, op);
  detail::check_same_device(x, mask, op);
  if (!detail::broadcasts_to(mask.sizes(), x.sizes())) {
    fail("{}: the mask of shape {} does not broadcast to the input's shape {}", op, format_sizes(mask.sizes()),
         format_sizes(x.sizes()));
  }
  detail::no_backward({&x}, op);
  const auto& s = impl_of(x);
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::mul, s.numel, s.dtype),
                   "aten::masked_fill_", s.device, s.numel == 0);
  return x;
}

namespace {
Tensor triangle(const Tensor& x, const char* op, std::string_view aten) {
  detail::check_defined(x, op, "self");
  if (x.dim() < 2) fail("{}: input tensor must have at least 2 dimensions, got {}", op, x.dim());
  Tensor out = elementwise(x.sizes(), x.dtype(), x.dtype(), x.device(), OpKind::copy, aten);
  if (autograd::any_requires_grad({&x})) {
    autograd::record(std::string_view(op) == "tril" ? "TrilBackward0" : "TriuBackward0", {&x}, {&out}, {},
                     [aten](Grads& g, Grads&, const Node&) {
                       return Grads{elementwise(g[0].sizes(), g[0].dtype(), g[0].dtype(), g[0].device(), OpKind::copy,
                                                aten)};
                     });
  }
  return out;
}
}  // namespace

Tensor tril(const Tensor& x, std::int64_t diagonal) {
  RecordOpScope scope;
  Tensor out = triangle(x, "tril", "aten::tril");
  if (scope.recording()) record_op("aten.tril.default", {RecordedArg::of(x), RecordedArg::of(diagonal)}, {out});
  return out;
}
Tensor triu(const Tensor& x, std::int64_t diagonal) {
  RecordOpScope scope;
  Tensor out = triangle(x, "triu", "aten::triu");
  if (scope.recording()) record_op("aten.triu.default", {RecordedArg::of(x), RecordedArg::of(diagonal)}, {out});
  return out;
}

namespace {
std::int64_t checked_index_dim(const Tensor& x, std::int64_t dim, const Tensor& index, const char* op) {
  detail::check_defined(x, op, "self");
  detail::check_defined(index, op, "index");
  if (index.dtype() != kInt64 && index.dtype() != kInt32) {
    fail("{}: Expected dtype int32/int64 for index but got: {}", op, scalar_type_name(index.dtype()));
  }
  if (index.dim() > 1) fail("{}: Index is supposed to be a vector, got {} dims", op, index.dim());
  detail::check_same_device(x, index, op);
  return detail::wrap_dim(dim, x.dim(), op);
}

// A gather's backward: the gradient's elements added into zeros of x's size where they came from
// (index_add_, or index_put_ with accumulation): a fill, then one kernel over the gradient.
void record_gather_backward(const Tensor& x, Tensor& out, const char* node, const char* aten) {
  if (!autograd::any_requires_grad({&x})) return;
  Sizes sx = x.sizes();
  const ScalarType type = x.dtype();
  autograd::record(node, {&x}, {&out}, {}, [sx, type, aten](Grads& g, Grads&, const Node&) {
    Tensor grad = zeros(sx, TensorOptions(type).device(g[0].device()));
    const auto& gi = impl_of(g[0]);
    detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::add, gi.numel, gi.dtype), aten,
                     gi.device, gi.numel == 0);
    return Grads{grad};
  });
}
}  // namespace

Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  const std::int64_t d = checked_index_dim(x, dim, index, op);
  Sizes sizes = x.sizes();
  if (!sizes.empty()) sizes[static_cast<std::size_t>(d)] = index.numel();
  // A gather: each output element read from its row of x (a copy of the output's elements).
  Tensor out = elementwise(sizes, x.dtype(), x.dtype(), x.device(), OpKind::copy, "aten::index_select");
  record_gather_backward(x, out, "IndexSelectBackward0", "aten::index_add_");
  return out;
}

Tensor& index_copy_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& source) {
  const char* op = "index_copy_";
  const std::int64_t d = checked_index_dim(x, dim, index, op);
  detail::check_defined(source, op, "source");
  Sizes expected = x.sizes();
  if (!expected.empty()) expected[static_cast<std::size_t>(d)] = index.numel();
  if (!detail::broadcasts_to(source.sizes(), expected)) {
    fail("{}: source of shape {} does not fit the {} indexed slices of shape {}", op, format_sizes(source.sizes()),
         index.numel(), format_sizes(expected));
  }
  detail::no_backward({&x, &source}, op);
  const std::int64_t n = detail::product(expected);
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::copy, n, x.dtype()), "aten::index_copy_",
                   x.device(), n == 0);
  return x;
}

namespace {
// The shape x[indices] has (aten::index's rule), the indices checked.
Sizes indexed_sizes(const Tensor& x, const std::vector<std::optional<Tensor>>& indices, const char* op) {
  detail::check_defined(x, op, "self");
  if (static_cast<std::int64_t>(indices.size()) > x.dim()) {
    fail("{}: too many indices for tensor of dimension {} (got {})", op, x.dim(), indices.size());
  }
  Sizes broadcast;
  bool any = false;
  std::size_t first = 0, last = 0, count = 0;
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    const Tensor& index = *indices[i];
    detail::check_defined(index, op, "indices");
    if (index.dtype() != kInt64 && index.dtype() != kInt32) {
      fail("{}: tensors used as indices must be long or int tensors, got {} at position {}", op,
           scalar_type_name(index.dtype()), i);
    }
    detail::check_same_device(x, index, op);
    broadcast = any ? broadcast_shapes(broadcast, index.sizes()) : index.sizes();
    if (!any) first = i;
    last = i;
    any = true;
    ++count;
  }
  if (!any) fail("{}: expected at least one index tensor", op);
  const Sizes xs = x.sizes();
  Sizes out;
  const bool adjacent = last - first + 1 == count;
  if (!adjacent) out = broadcast;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    const bool indexed = d < indices.size() && indices[d].has_value();
    if (!indexed) {
      out.push_back(xs[d]);
    } else if (adjacent && d == first) {
      out.insert(out.end(), broadcast.begin(), broadcast.end());
    }
  }
  return out;
}
}  // namespace

Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices) {
  const Sizes sizes = indexed_sizes(x, indices, "index");
  // A gather: each output element read from where its indices point (a copy of the output).
  Tensor out = elementwise(sizes, x.dtype(), x.dtype(), x.device(), OpKind::copy, "aten::index");
  record_gather_backward(x, out, "IndexBackward0", "aten::index_put_");
  return out;
}

Tensor& index_put_(Tensor& x, const std::vector<std::optional<Tensor>>& indices, const Tensor& values) {
  const char* op = "index_put_";
  const Sizes expected = indexed_sizes(x, indices, op);
  detail::check_defined(values, op, "values");
  if (values.dtype() != x.dtype()) {
    fail("Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
         scalar_type_name(x.dtype()), scalar_type_name(values.dtype()));
  }
  if (!detail::broadcasts_to(values.sizes(), expected)) {
    fail("{}: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}", op,
         format_sizes(values.sizes()), format_sizes(expected));
  }
  detail::no_backward({&x, &values}, op);
  const std::int64_t n = detail::product(expected);
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(OpKind::copy, n, x.dtype()), "aten::index_put_",
                   x.device(), n == 0);
  return x;
}

Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement) {
  const char* op = "multinomial";
  detail::check_defined(probs, op, "self");
  const auto& s = impl_of(probs);
  if (s.sizes.empty() || s.sizes.size() > 2) fail("{}: prob_dist must be 1 or 2 dim, got {}", op, s.sizes.size());
  if (!is_floating_point(s.dtype)) fail("{}: expected a floating point probability tensor, got {}", op, scalar_type_name(s.dtype));
  const std::int64_t categories = s.sizes.back();
  if (num_samples <= 0) fail("{}: cannot sample n_sample <= 0 samples", op);
  if (!replacement && num_samples > categories) {
    fail("{}: cannot sample n_sample > prob_dist.size(-1) samples without replacement", op);
  }
  detail::no_backward({&probs}, op);
  Sizes out_sizes = s.sizes;
  out_sizes.back() = num_samples;
  // One pass over each row (its cumulative sum and the search): a row-wise kernel.
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, out_sizes, kInt64, s.device, "aten::multinomial");
  if (ctx) {
    runtime::OpDesc o;
    o.kind = OpKind::softmax;
    o.dtype = to_runtime_dtype(s.dtype);
    o.cols = static_cast<std::uint64_t>(categories);
    o.rows = categories == 0 ? 0 : static_cast<std::uint64_t>(s.numel / categories);
    detail::dispatch(ctx, o, "aten::multinomial", s.device, s.numel == 0);
  }
  return out;
}

}  // namespace syntorch::torch
