// More reductions (amax/amin, max/min with positions, all/any, vector norms), scans (cumsum),
// sorts, gather and scatter, and the elementwise maximum/minimum, sign, rounding and leaky_relu:
// each one runtime op, with its backward where PyTorch's is defined.

#include <algorithm>
#include <numeric>

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/autocast.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch {

using detail::fail;
using detail::Grads;
using detail::impl_of;
using detail::Sizes;
using runtime::OpDesc;
using runtime::OpKind;
using Node = autograd::Node;

namespace {

// The shape a reduction over `dims` (all dims when empty) leaves, with and without keepdim, and
// its rows (outputs) and columns (inputs per output).
struct Reduced {
  Sizes out;        // as returned
  Sizes with_ones;  // the input's shape, reduced dims as 1 (the gradient's broadcast shape)
  std::int64_t rows = 1;
  std::int64_t cols = 1;
};

Reduced reduced_shape(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op) {
  const auto& s = impl_of(x);
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  std::vector<bool> reduced(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)), dims.empty());
  std::vector<bool> named(reduced.size(), false);
  for (std::int64_t d : dims) {
    const auto w = static_cast<std::size_t>(detail::wrap_dim(d, n, op));
    if (named[w]) fail("{}: dim {} appears multiple times in the list of dims", op, w);
    named[w] = reduced[w] = true;
  }
  Reduced r;
  r.with_ones = s.sizes;
  for (std::size_t i = 0; i < s.sizes.size(); ++i) {
    if (reduced[i]) {
      r.with_ones[i] = 1;
      r.cols *= s.sizes[i];
      if (keepdim) r.out.push_back(1);
    } else {
      r.out.push_back(s.sizes[i]);
      r.rows *= s.sizes[i];
    }
  }
  return r;
}

// One row-pass op of `kind` over x into a new tensor of r.out.
Tensor row_pass(const Tensor& x, const Reduced& r, OpKind kind, ScalarType out_dtype, std::string_view aten) {
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, r.out, out_dtype, s.device, aten);
  if (ctx) {
    OpDesc o;
    o.kind = kind;
    o.dtype = to_runtime_dtype(s.dtype);
    o.rows = static_cast<std::uint64_t>(r.rows);
    o.cols = static_cast<std::uint64_t>(r.cols);
    detail::dispatch(ctx, o, aten, s.device, s.numel == 0);
  }
  return out;
}

// One gather or scatter op over `elements` index positions.
void indexed(OpKind kind, std::int64_t elements, ScalarType dtype, Device device, std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) return;
  OpDesc o = detail::elementwise_op(kind, elements, dtype);
  detail::dispatch(ctx, o, aten, device, elements == 0);
}

// The gradient of an extremum or a sort: dy flowing to the positions that held the results, one
// kernel over the input (PyTorch scatters it into a zeroed gradient).
void record_spread(const char* node, const Tensor& x, Tensor& out, const Reduced& r) {
  Sizes in = impl_of(x).sizes;
  Sizes ones = r.with_ones;
  autograd::record(node, {&x}, {&out}, {}, [in, ones](Grads& g, Grads&, const Node&) {
    return Grads{g[0].reshape(ones).expand(in) * 1.0};
  });
}

Tensor extremum(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op, std::string_view aten) {
  detail::check_defined(x, op, "self");
  detail::check_real(x, op, "self");
  if (x.numel() == 0) fail("{}(): Expected reduction dim to be specified for input.numel() == 0.", op);
  const Reduced r = reduced_shape(x, dims, keepdim, op);
  Tensor out = row_pass(x, r, OpKind::amax, x.dtype(), aten);
  if (autograd::any_requires_grad({&x})) {
    const std::string_view name(op);
    record_spread(name == "amax" ? "AmaxBackward0" : name == "amin" ? "AminBackward0"
                  : name == "max" ? "MaxBackward1" : "MinBackward1", x, out, r);
  }
  return out;
}

std::tuple<Tensor, Tensor> extremum_dim(const Tensor& x, std::int64_t dim, bool keepdim, const char* op,
                                        std::string_view aten) {
  detail::check_defined(x, op, "self");
  detail::check_real(x, op, "self");
  const std::int64_t d = detail::wrap_dim(dim, x.dim(), op);
  if (x.dim() > 0 && x.size(d) == 0) fail("{}(): Expected reduction dim {} to have non-zero size.", op, d);
  const std::int64_t dims[] = {d};
  const Reduced r = reduced_shape(x, IntArrayRef(dims, x.dim() > 0 ? 1 : 0), keepdim, op);
  Tensor values = row_pass(x, r, OpKind::amax, x.dtype(), aten);  // values and positions, one pass
  Tensor indices = detail::make_tensor(runtime::current_rank(), r.out, ScalarType::Long, x.device(), aten);
  if (autograd::any_requires_grad({&x})) record_spread(op[1] == 'a' ? "MaxBackward0" : "MinBackward0", x, values, r);
  return {values, indices};
}

Tensor logical(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op, std::string_view aten) {
  detail::check_defined(x, op, "self");
  return row_pass(x, reduced_shape(x, dims, keepdim, op), OpKind::all, ScalarType::Bool, aten);
}

std::int64_t check_index(const Tensor& x, std::int64_t dim, const Tensor& index, const char* op) {
  detail::check_defined(index, op, "index");
  detail::check_same_device(x, index, op);
  if (index.dtype() != ScalarType::Long && index.dtype() != ScalarType::Int) {
    fail("{}(): Expected dtype int64 for index", op);
  }
  if (index.dim() != x.dim()) fail("Index tensor must have the same number of dimensions as input tensor");
  return detail::wrap_dim(dim, x.dim(), op);
}

Tensor rounding(const Tensor& x, const char* op, std::string_view aten) {
  detail::check_defined(x, op, "self");
  detail::check_real(x, op, "self");
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, aten);
  detail::dispatch(ctx, detail::elementwise_op(OpKind::round, s.numel, s.dtype), aten, s.device, s.numel == 0);
  if (autograd::any_requires_grad({&x})) {
    // A step function: its gradient is zero (a zeroed tensor, as PyTorch makes).
    autograd::record("RoundBackward0", {&x}, {&out}, {}, [](Grads& g, Grads&, const Node&) {
      return Grads{zeros_like(g[0])};
    });
  }
  return out;
}

}  // namespace

Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return extremum(x, dims, keepdim, "amax", "aten::amax");
}

Tensor prod(const Tensor& x, IntArrayRef dims, bool keepdim) {
  detail::check_defined(x, "prod", "self");
  detail::check_real(x, "prod", "self");
  const Reduced r = reduced_shape(x, dims, keepdim, "prod");
  // fp32 under autocast (PyTorch's CUDA autocast lists prod), int64 for integer inputs.
  const ScalarType dtype = autocast::fp32_output_dtype(x, std::nullopt).value_or(detail::sum_dtype(x.dtype()));
  Tensor out = row_pass(x, r, OpKind::sum, dtype, "aten::prod");  // a sum's pass, multiplying
  if (autograd::any_requires_grad({&x})) {
    Sizes in = impl_of(x).sizes;
    Sizes ones = r.with_ones;
    autograd::record(dims.empty() ? "ProdBackward0" : "ProdBackward1", {&x}, {&out}, {x, out},
                     [in, ones](Grads& g, Grads& saved, const Node&) {
                       // PyTorch's for inputs without zeros: the product over the others.
                       return Grads{(g[0] * saved[1]).reshape(ones).expand(in) / saved[0]};
                     });
  }
  return out;
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return extremum(x, dims, keepdim, "amin", "aten::amin");
}
Tensor max(const Tensor& x) { return extremum(x, {}, false, "max", "aten::max"); }
Tensor min(const Tensor& x) { return extremum(x, {}, false, "min", "aten::min"); }
std::tuple<Tensor, Tensor> max(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extremum_dim(x, dim, keepdim, "max", "aten::max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extremum_dim(x, dim, keepdim, "min", "aten::min");
}

Tensor all(const Tensor& x, IntArrayRef dims, bool keepdim) { return logical(x, dims, keepdim, "all", "aten::all"); }
Tensor any(const Tensor& x, IntArrayRef dims, bool keepdim) { return logical(x, dims, keepdim, "any", "aten::any"); }

Tensor norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  detail::check_defined(x, "norm", "self");
  const bool complex = x.dtype() == kComplexFloat || x.dtype() == kComplexDouble;
  if (!x.is_floating_point() && !complex) {
    fail("linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
         scalar_type_name(x.dtype()));
  }
  const Reduced r = reduced_shape(x, dims, keepdim, "norm");
  const ScalarType type = complex ? (x.dtype() == kComplexDouble ? ScalarType::Double : ScalarType::Float)
                                         : x.dtype();
  Tensor out = row_pass(x, r, OpKind::norm, type, "aten::linalg_vector_norm");
  if (autograd::any_requires_grad({&x})) {
    Sizes ones = r.with_ones;
    // dx = x * dy / |x| (for p = 2; other p alike in cost): a small divide, one multiply over x.
    autograd::record("LinalgVectorNormBackward0", {&x}, {&out}, {x, out}, [ones, p](Grads& g, Grads& s, const Node&) {
      (void)p;
      return Grads{s[0] * (g[0] / s[1]).reshape(ones)};
    });
  }
  return out;
}

Tensor cumsum(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype) {
  detail::check_defined(x, "cumsum", "self");
  const std::int64_t d = detail::wrap_dim(dim, x.dim(), "cumsum");
  const auto& s = impl_of(x);
  const std::int64_t cols = s.sizes.empty() ? 1 : s.sizes[static_cast<std::size_t>(d)];
  // Integers and bools accumulate in int64, as PyTorch's cumsum.
  const ScalarType type = dtype.value_or(is_floating_point(s.dtype) || s.dtype == kComplexFloat ||
                                                 s.dtype == kComplexDouble
                                             ? s.dtype
                                             : ScalarType::Long);
  Reduced r;
  r.out = s.sizes;
  r.rows = cols == 0 ? 0 : s.numel / cols;
  r.cols = cols;
  Tensor out = row_pass(x, r, OpKind::cumsum, type, "aten::cumsum");
  if (autograd::any_requires_grad({&x})) {
    // The gradient is the reversed running sum of dy: one more scan.
    autograd::record("CumsumBackward0", {&x}, {&out}, {}, [d](Grads& g, Grads&, const Node&) {
      return Grads{cumsum(g[0], d)};
    });
  }
  return out;
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, std::int64_t dim, bool descending) {
  (void)descending;  // the order changes values only
  detail::check_defined(x, "sort", "self");
  const std::int64_t d = detail::wrap_dim(dim, x.dim(), "sort");
  const auto& s = impl_of(x);
  const std::int64_t cols = s.sizes.empty() ? 1 : s.sizes[static_cast<std::size_t>(d)];
  Reduced r;
  r.out = s.sizes;
  r.with_ones = s.sizes;
  r.rows = cols == 0 ? 0 : s.numel / cols;
  r.cols = cols;
  Tensor values = row_pass(x, r, OpKind::sort, s.dtype, "aten::sort");
  Tensor indices = detail::make_tensor(runtime::current_rank(), s.sizes, ScalarType::Long, s.device, "aten::sort");
  if (autograd::any_requires_grad({&x})) {
    const ScalarType type = s.dtype;
    const Device device = s.device;
    const std::int64_t n = s.numel;
    // dy scattered back to the positions the values came from: one scatter over the input.
    autograd::record("SortBackward0", {&x}, {&values}, {}, [type, device, n](Grads& g, Grads&, const Node&) {
      Tensor dx = empty_like(g[0]);
      indexed(OpKind::scatter, n, type, device, "aten::scatter");
      return Grads{dx};
    });
  }
  return {values, indices};
}

Tensor argsort(const Tensor& x, std::int64_t dim, bool descending) {
  NoGradGuard no_grad;
  return std::get<1>(sort(x, dim, descending));
}

Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index) {
  detail::check_defined(x, "gather", "self");
  const std::int64_t d = check_index(x, dim, index, "gather");
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, index.sizes(), x.dtype(), x.device(), "aten::gather");
  indexed(OpKind::gather, index.numel(), x.dtype(), x.device(), "aten::gather");
  if (autograd::any_requires_grad({&x})) {
    Sizes in = x.sizes();
    // A zeroed gradient of the input's shape, dy added at the gathered positions.
    autograd::record("GatherBackward0", {&x}, {&out}, {index}, [in, d](Grads& g, Grads& s, const Node&) {
      Tensor dx = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
      return Grads{scatter_add(dx, d, s[0], g[0])};
    });
  }
  return out;
}

namespace {
Tensor& scatter_into(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor* src, const char* op,
                     std::string_view aten) {
  detail::check_defined(x, op, "self");
  const std::int64_t d = check_index(x, dim, index, op);
  if (src) {
    detail::check_same_device(x, *src, op);
    if (src->dtype() != x.dtype()) fail("{}(): Expected self.dtype to be equal to src.dtype", op);
    for (std::int64_t i = 0; i < index.dim(); ++i) {
      if (index.size(i) > src->size(i)) {
        fail("Expected index {} to be smaller than self {} apart from dimension {} and to be smaller size than src {}",
             format_sizes(index.sizes()), format_sizes(x.sizes()), d, format_sizes(src->sizes()));
      }
    }
  }
  if (autograd::GradMode::is_enabled() && x.requires_grad() && x.is_leaf()) {
    fail("{}: a leaf Variable that requires grad is being used in an in-place operation.", op);
  }
  indexed(OpKind::scatter, index.numel(), x.dtype(), x.device(), aten);
  const bool add = std::string_view(op) == "scatter_add_";
  if (src ? autograd::any_requires_grad({&x, src}) : autograd::any_requires_grad({&x})) {
    // x's history goes on through this update: the gradient to x is dy (scatter_add_) or dy with
    // the overwritten positions zeroed (scatter_: one scatter kernel on a copy); to src, dy
    // gathered at the positions (one gather kernel).
    const Tensor self_before = x;
    std::vector<const Tensor*> inputs{&self_before};
    if (src) inputs.push_back(src);
    const bool has_src = src != nullptr;
    autograd::record(add ? "ScatterAddBackward0" : "ScatterBackward0", inputs, {&x}, {index},
                     [d, add, has_src](Grads& g, Grads& s, const Node& node) {
                       Grads out;
                       if (node.needs_input_grad(0)) {
                         if (add) {
                           out.push_back(g[0]);
                         } else {
                           Tensor dx = g[0].clone();
                           NoGradGuard no_grad;
                           scatter_(dx, d, s[0], 0.0);
                           out.push_back(dx);
                         }
                       } else {
                         out.push_back(Tensor());
                       }
                       if (has_src) out.push_back(node.needs_input_grad(1) ? gather(g[0], d, s[0]) : Tensor());
                       return out;
                     });
  }
  return x;
}
}  // namespace

Tensor& scatter_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_into(x, dim, index, &src, "scatter_", "aten::scatter_");
}
Tensor& scatter_(Tensor& x, std::int64_t dim, const Tensor& index, double value) {
  (void)value;
  return scatter_into(x, dim, index, nullptr, "scatter_", "aten::scatter_");
}
Tensor& scatter_add_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_into(x, dim, index, &src, "scatter_add_", "aten::scatter_add_");
}

Tensor scatter(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();  // a clone carries x's history; the update adds its own
  return scatter_(out, dim, index, src);
}
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  return scatter_add_(out, dim, index, src);
}

namespace {
// The larger (smaller) of two broadcast operands: one kernel; each operand's gradient dy where it
// won (a masked copy each, summed down to its shape where it broadcast).
Tensor pairwise_extremum(const Tensor& a, const Tensor& b, const char* op, std::string_view aten) {
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  detail::check_same_device(a, b, op);
  const ScalarType type = detail::result_type(a, b, op);
  const Sizes sizes = broadcast_shapes(a.sizes(), b.sizes());
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, sizes, type, a.device(), aten);
  const std::int64_t n = out.numel();
  detail::dispatch(ctx, detail::elementwise_op(OpKind::maximum, n, type), aten, a.device(), n == 0);
  if (autograd::any_requires_grad({&a, &b})) {
    Sizes sa = a.sizes(), sb = b.sizes();
    autograd::record(op[1] == 'a' ? "MaximumBackward0" : "MinimumBackward0", {&a, &b}, {&out}, {},
                     [sa, sb](Grads& g, Grads&, const Node&) {
                       return Grads{detail::sum_to(g[0] * 1.0, sa), detail::sum_to(g[0] * 1.0, sb)};
                     });
  }
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return pairwise_extremum(a, b, "maximum", "aten::maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return pairwise_extremum(a, b, "minimum", "aten::minimum"); }

Tensor sign(const Tensor& x) {
  detail::check_defined(x, "sign", "self");
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, "aten::sign");
  detail::dispatch(ctx, detail::elementwise_op(OpKind::sign, s.numel, s.dtype), "aten::sign", s.device, s.numel == 0);
  if (autograd::any_requires_grad({&x})) {
    autograd::record("SignBackward0", {&x}, {&out}, {}, [](Grads& g, Grads&, const Node&) {
      return Grads{zeros_like(g[0])};
    });
  }
  return out;
}
Tensor round(const Tensor& x) { return rounding(x, "round", "aten::round"); }
Tensor floor(const Tensor& x) { return rounding(x, "floor", "aten::floor"); }
Tensor ceil(const Tensor& x) { return rounding(x, "ceil", "aten::ceil"); }
Tensor trunc(const Tensor& x) { return rounding(x, "trunc", "aten::trunc"); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  (void)negative_slope;  // the slope changes values only
  detail::check_defined(x, "leaky_relu", "self");
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, "aten::leaky_relu");
  detail::dispatch(ctx, detail::elementwise_op(OpKind::leaky_relu, s.numel, s.dtype), "aten::leaky_relu", s.device,
                   s.numel == 0);
  if (autograd::any_requires_grad({&x})) {
    autograd::record("LeakyReluBackward0", {&x}, {&out}, {x}, [](Grads& g, Grads& saved, const Node&) {
      return Grads{detail::elementwise_backward(OpKind::leaky_relu_backward, g[0], saved[0],
                                                "aten::leaky_relu_backward")};
    });
  }
  return out;
}

}  // namespace syntorch::torch
