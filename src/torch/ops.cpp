// Factories and compute ops: check shapes, make the output, launch one runtime op.

#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/record.hpp"

#include <algorithm>
#include <cmath>

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/float8.hpp"

namespace syntorch::torch {

using detail::fail;
using detail::Grads;
using detail::impl_of;
using detail::Sizes;
using runtime::OpDesc;
using runtime::OpKind;
using Node = autograd::Node;

namespace {

// A factory: a new tensor, then a fill kernel (a copy of numel elements) unless `fill` is null.
Tensor factory(IntArrayRef sizes, const TensorOptions& options, std::string_view name, bool fill) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (options.pinned_memory() && !options.device().is_cpu()) {
    fail("{}: pin_memory is only for CPU tensors, not '{}' ones", name, options.device().str());
  }
  Tensor out = detail::make_tensor(ctx, sizes, options.dtype(), options.device(), name);
  out.unsafe_get_impl()->pinned = options.pinned_memory();
  if (ctx) {
    const auto& o = impl_of(out);
    if (fill) {
      detail::dispatch(ctx, detail::elementwise_op(OpKind::copy, o.numel, o.dtype), name, o.device, o.numel == 0);
    } else {
      ctx->host_op(name);
    }
  }
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}

}  // namespace

namespace {
// A factory recorded as ATen records it: its sizes (and fill value), its dtype.
Tensor recorded_factory(IntArrayRef sizes, const TensorOptions& options, const char* aten, bool fill, const char* op,
                        std::optional<double> value = std::nullopt) {
  RecordOpScope scope;
  Tensor out = factory(sizes, options, aten, fill);
  if (scope.recording()) {
    if (value) {
      record_op(op, {RecordedArg::of(sizes), RecordedArg::of_real(*value), RecordedArg::of(options.dtype()).keyword("dtype")},
                {out});
    } else {
      record_op(op, {RecordedArg::of(sizes), RecordedArg::of(options.dtype()).keyword("dtype")}, {out});
    }
  }
  return out;
}
}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options) {
  return recorded_factory(sizes, options, "aten::empty", false, "aten.empty.memory_format");
}
Tensor zeros(IntArrayRef sizes, TensorOptions options) {
  return recorded_factory(sizes, options, "aten::zeros", true, "aten.zeros.default");
}
Tensor ones(IntArrayRef sizes, TensorOptions options) {
  return recorded_factory(sizes, options, "aten::ones", true, "aten.ones.default");
}
Tensor full(IntArrayRef sizes, double value, TensorOptions options) {
  return recorded_factory(sizes, options, "aten::full", true, "aten.full.default", value);
}
Tensor randn(IntArrayRef sizes, TensorOptions options) { return factory(sizes, options, "aten::randn", true); }
Tensor rand(IntArrayRef sizes, TensorOptions options) { return factory(sizes, options, "aten::rand", true); }
Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes, TensorOptions options) {
  if (high <= low) fail("random_ expects 'from' to be less than 'to', but got from={} >= to={}", low, high);
  return factory(sizes, options, "aten::randint", true);
}

namespace {
TensorOptions options_of(const Tensor& t, const char* op) {
  detail::check_defined(t, op, "self");
  return TensorOptions(t.dtype()).device(t.device());
}
}  // namespace

Tensor empty_like(const Tensor& t) { return factory(t.sizes(), options_of(t, "empty_like"), "aten::empty_like", false); }
Tensor zeros_like(const Tensor& t) { return factory(t.sizes(), options_of(t, "zeros_like"), "aten::zeros_like", true); }
Tensor ones_like(const Tensor& t) { return factory(t.sizes(), options_of(t, "ones_like"), "aten::ones_like", true); }

Tensor arange(std::int64_t end, TensorOptions options) { return arange(0, end, options); }

Tensor arange_unrecorded(std::int64_t start, std::int64_t end, TensorOptions options) {
  if (end < start) fail("arange: upper bound and larger bound inconsistent with step sign (start {}, end {})", start, end);
  const std::int64_t n = end - start;
  return factory(IntArrayRef(&n, 1), options, "aten::arange", true);
}

Tensor arange(std::int64_t start, std::int64_t end, TensorOptions options) {
  RecordOpScope scope;
  Tensor out = arange_unrecorded(start, end, options);
  if (scope.recording()) {
    record_op("aten.arange.start", {RecordedArg::of(start), RecordedArg::of(end), RecordedArg::of(out.dtype()).keyword("dtype")},
              {out});
  }
  return out;
}

Tensor tensor(const std::vector<std::int64_t>& values, TensorOptions options) {
  runtime::RankContext* ctx = runtime::current_rank();
  const auto n = static_cast<std::int64_t>(values.size());
  Tensor out = detail::make_tensor(ctx, IntArrayRef(&n, 1), options.dtype(), options.device(), "aten::tensor");
  if (ctx) {
    if (out.device().is_cuda() && out.nbytes() > 0) {
      ctx->copy_host_to_device(out.nbytes(), "aten::tensor");
    } else {
      ctx->host_op("aten::tensor");
    }
  }
  return out;
}

// --- Broadcasting and pointwise ---

namespace {

Sizes broadcast(IntArrayRef a, IntArrayRef b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Sizes out(n);
  for (std::size_t i = 0; i < n; ++i) {
    // i counts from the right.
    const std::int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    std::int64_t s;
    if (sa == sb || sb == 1) {
      s = sa;
    } else if (sa == 1) {
      s = sb;
    } else {
      fail("{}: The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {} "
           "(shapes {} and {})",
           op, sa, sb, n - 1 - i, format_sizes(a), format_sizes(b));
    }
    out[n - 1 - i] = s;
  }
  return out;
}

// Backward of a + b, a - b, a * b, a / b, each gradient summed back to its input's shape.
void record_binary(OpKind kind, const Tensor& a, const Tensor& b, Tensor& out) {
  Sizes sa = a.sizes(), sb = b.sizes();
  switch (kind) {
    case OpKind::add:
    case OpKind::sub:
      autograd::record(kind == OpKind::add ? "AddBackward0" : "SubBackward0", {&a, &b}, {&out}, {},
                     [sa, sb, kind](Grads& g, Grads&, const Node& n) {
                       Tensor gb = n.needs_input_grad(1) ? detail::sum_to(g[0], sb) : Tensor();
                       if (gb.defined() && kind == OpKind::sub) gb = -gb;
                       return Grads{n.needs_input_grad(0) ? detail::sum_to(g[0], sa) : Tensor(), gb};
                     });
      return;
    case OpKind::mul:
      autograd::record("MulBackward0", {&a, &b}, {&out}, {a, b}, [sa, sb](Grads& g, Grads& s, const Node& n) {
        return Grads{n.needs_input_grad(0) ? detail::sum_to(g[0] * s[1], sa) : Tensor(),
                     n.needs_input_grad(1) ? detail::sum_to(g[0] * s[0], sb) : Tensor()};
      });
      return;
    default:  // div: d/da = g / b, d/db = -g * a / b^2
      autograd::record("DivBackward0", {&a, &b}, {&out}, {a, b}, [sa, sb](Grads& g, Grads& s, const Node& n) {
        return Grads{n.needs_input_grad(0) ? detail::sum_to(g[0] / s[1], sa) : Tensor(),
                     n.needs_input_grad(1) ? detail::sum_to(-(g[0] * s[0] / (s[1] * s[1])), sb) : Tensor()};
      });
  }
}

// The activations' backward kernels, each reading the saved input or output.
struct ActivationBackward {
  OpKind kind, backward;
  std::string_view aten, node;
  bool from_output;
};
constexpr ActivationBackward kActivationBackward[] = {
    {OpKind::gelu, OpKind::gelu_backward, "aten::gelu_backward", "GeluBackward0", false},
    {OpKind::silu, OpKind::silu_backward, "aten::silu_backward", "SiluBackward0", false},
    {OpKind::relu, OpKind::relu_backward, "aten::threshold_backward", "ReluBackward0", true},
    {OpKind::tanh, OpKind::tanh_backward, "aten::tanh_backward", "TanhBackward0", true},
    {OpKind::sigmoid, OpKind::sigmoid_backward, "aten::sigmoid_backward", "SigmoidBackward0", true},
};

// Backward of the one-input elementwise ops: tensor-scalar arithmetic (the scalar's value is not
// kept: mul and div cost one kernel, add and sub none), negation and the activations (their
// backward kernels read the saved input or output).
// `recorded`: reports itself as aten.<op>.default(self) (false for the internal ops of backward
// formulas, whose ATen schemas take more).
Tensor unary(const Tensor& a, OpKind kind, const char* op, std::string_view aten,
             std::optional<ScalarType> out_dtype = std::nullopt, bool recorded = true);

void record_unary(OpKind kind, std::string_view aten, const Tensor& a, Tensor& out) {
  for (const ActivationBackward& act : kActivationBackward) {
    if (act.kind != kind) continue;
    autograd::record(act.node, {&a}, {&out}, {act.from_output ? out : a},
                     [back = act.backward, name = act.aten](Grads& g, Grads& s, const Node&) {
                       return Grads{detail::elementwise_backward(back, g[0], s[0], name)};
                     });
    return;
  }
  switch (kind) {
    case OpKind::add:
    case OpKind::sub:
      if (aten == "aten::rsub") {
        autograd::record("RsubBackward1", {&a}, {&out}, {}, [](Grads& g, Grads&, const Node&) { return Grads{-g[0]}; });
      } else {
        autograd::record(kind == OpKind::add ? "AddBackward1" : "SubBackward1", {&a}, {&out}, {},
                       [](Grads& g, Grads&, const Node&) { return Grads{g[0]}; });
      }
      return;
    case OpKind::div:
      if (aten == "aten::reciprocal") {  // d(1/x) = -dy / x^2 = -dy * y^2, from the saved output
        autograd::record("ReciprocalBackward0", {&a}, {&out}, {out},
                         [](Grads& g, Grads& s, const Node&) { return Grads{-(g[0] * (s[0] * s[0]))}; });
        return;
      }
      [[fallthrough]];
    case OpKind::mul:
      autograd::record(kind == OpKind::mul ? "MulBackward1" : "DivBackward1", {&a}, {&out}, {},
                     [](Grads& g, Grads&, const Node&) { return Grads{g[0] * 1.0}; });
      return;
    case OpKind::neg:
      autograd::record("NegBackward0", {&a}, {&out}, {}, [](Grads& g, Grads&, const Node&) { return Grads{-g[0]}; });
      return;
    case OpKind::exp:  // dy * exp(x), from the saved output
      autograd::record("ExpBackward0", {&a}, {&out}, {out}, [](Grads& g, Grads& s, const Node&) { return Grads{g[0] * s[0]}; });
      return;
    case OpKind::log:  // dy / x, from the saved input
      autograd::record("LogBackward0", {&a}, {&out}, {a}, [](Grads& g, Grads& s, const Node&) { return Grads{g[0] / s[0]}; });
      return;
    case OpKind::sqrt:  // dy / (2 y), from the saved output
      autograd::record("SqrtBackward0", {&a}, {&out}, {out},
                       [](Grads& g, Grads& s, const Node&) { return Grads{g[0] / (s[0] * 2.0)}; });
      return;
    case OpKind::rsqrt:  // -dy y^3 / 2, from the saved output
      autograd::record("RsqrtBackward0", {&a}, {&out}, {out},
                       [](Grads& g, Grads& s, const Node&) { return Grads{(g[0] * pow(s[0], 3.0)) * -0.5}; });
      return;
    case OpKind::sin:  // dy cos(x)
      autograd::record("SinBackward0", {&a}, {&out}, {a}, [](Grads& g, Grads& s, const Node&) { return Grads{g[0] * cos(s[0])}; });
      return;
    case OpKind::cos:  // -dy sin(x)
      autograd::record("CosBackward0", {&a}, {&out}, {a}, [](Grads& g, Grads& s, const Node&) { return Grads{g[0] * -sin(s[0])}; });
      return;
    case OpKind::abs:  // dy sgn(x): the sign's kernel (as abs's), then the product
      autograd::record("AbsBackward0", {&a}, {&out}, {a}, [](Grads& g, Grads& s, const Node&) {
        return Grads{g[0] * unary(s[0], OpKind::abs, "sgn", "aten::sgn", std::nullopt, false)};
      });
      return;
    default:
      detail::no_backward({&a}, std::string(aten).c_str());
  }
}

Tensor binary_unrecorded(const Tensor& a, const Tensor& b, OpKind kind, const char* op, std::string_view aten) {
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  detail::check_same_device(a, b, op);
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  // Mixed dtypes promote (the kernel reads each operand in its own type: no cast kernel).
  const ScalarType type = detail::result_type(a, b, op);
  // Same shapes (the common case) skip the broadcast.
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = x.sizes == y.sizes ? detail::make_tensor(ctx, x.sizes, type, x.device, aten)
                                  : detail::make_tensor(ctx, broadcast(x.sizes, y.sizes, op), type, x.device, aten);
  const std::int64_t n = impl_of(out).numel;
  detail::dispatch(ctx, detail::elementwise_op(kind, n, type), aten, x.device, n == 0);
  if (autograd::any_requires_grad({&a, &b})) record_binary(kind, a, b, out);
  return out;
}

Tensor binary(const Tensor& a, const Tensor& b, OpKind kind, const char* op, std::string_view aten) {
  RecordOpScope scope;
  Tensor out = binary_unrecorded(a, b, kind, op, aten);
  if (scope.recording()) {
    record_op(fmt::format("aten.{}.Tensor", op), {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  }
  return out;
}

// A new tensor of a's shape (of out_dtype, else a's) from one elementwise kernel (tensor-scalar
// ops, activations, math functions).
Tensor unary(const Tensor& a, OpKind kind, const char* op, std::string_view aten, std::optional<ScalarType> out_dtype,
             bool recorded) {
  RecordOpScope scope;
  detail::check_defined(a, op, "self");
  const auto& x = impl_of(a);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, x.sizes, out_dtype.value_or(x.dtype), x.device, aten);
  detail::dispatch(ctx, detail::elementwise_op(kind, x.numel, x.dtype), aten, x.device, x.numel == 0);
  if (autograd::any_requires_grad({&a})) record_unary(kind, aten, a, out);
  if (recorded && scope.recording()) record_op(fmt::format("aten.{}.default", op), {RecordedArg::of(a)}, {out});
  return out;
}

// The history of an in-place update of self (by other, or by a scalar when other is null): a leaf
// that requires grad refuses it, as PyTorch does; otherwise self's history becomes a node over its
// previous history and other's. add_ and sub_ pass the gradient through; mul_ and div_ by a
// scalar scale it (one kernel); by a tensor they would need the overwritten values.
void record_inplace(Tensor& self, const Tensor* other, OpKind kind, const char* op) {
  if (!autograd::GradMode::is_enabled()) return;
  if (self.requires_grad() && self.is_leaf()) {
    fail("{}: a leaf Variable that requires grad is being used in an in-place operation.", op);
  }
  const Tensor none;
  const Tensor& o = other ? *other : none;
  if (!autograd::any_requires_grad({&self, &o})) return;
  if (other && (kind == OpKind::mul || kind == OpKind::div)) detail::no_backward({&self, &o}, op);
  Sizes so = other ? other->sizes() : Sizes{};
  const bool negate = kind == OpKind::sub;
  const bool scale = kind == OpKind::mul || kind == OpKind::div;
  autograd::record(op, {&self, &o}, {&self}, {}, [so, negate, scale](Grads& g, Grads&, const Node& n) {
    Tensor gs = n.needs_input_grad(0) ? (scale ? g[0] * 1.0 : g[0]) : Tensor();
    Tensor go;
    if (n.needs_input_grad(1)) {
      go = detail::sum_to(g[0], so);
      if (negate) go = -go;
    }
    return Grads{gs, go};
  });
}

// self op= other, in place: other must broadcast to self's shape.
Tensor& inplace(Tensor& self, const Tensor& other, OpKind kind, const char* op, std::string_view aten) {
  RecordOpScope scope;
  detail::check_defined(self, op, "self");
  detail::check_defined(other, op, "other");
  detail::check_same_device(self, other, op);
  const auto& x = impl_of(self);
  const auto& y = impl_of(other);
  // Another dtype is read as it is, as long as the promoted result can be written into self.
  const ScalarType type = detail::result_type(self, other, op);
  if (is_floating_point(type) && !is_floating_point(x.dtype)) {
    fail("{}: result type {} can't be cast to the desired output type {}", op, scalar_type_name(type),
         scalar_type_name(x.dtype));
  }
  if (x.sizes != y.sizes && !detail::broadcasts_to(y.sizes, x.sizes)) {
    fail("{}: output with shape {} doesn't match the broadcast shape {}", op, format_sizes(x.sizes),
         format_sizes(broadcast(x.sizes, y.sizes, op)));
  }
  record_inplace(self, &other, kind, op);
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(kind, x.numel, x.dtype), aten, x.device,
                   x.numel == 0);
  if (scope.recording()) {
    record_op(fmt::format("aten.{}.Tensor", op), {RecordedArg::of(self), RecordedArg::of(other)}, {self});
  }
  return self;
}

Tensor& inplace_scalar(Tensor& self, double value, OpKind kind, const char* op, std::string_view aten) {
  RecordOpScope scope;
  detail::check_defined(self, op, "self");
  record_inplace(self, nullptr, kind, op);
  const auto& x = impl_of(self);
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(kind, x.numel, x.dtype), aten, x.device,
                   x.numel == 0);
  if (scope.recording()) {
    record_op(fmt::format("aten.{}.Scalar", op), {RecordedArg::of(self), RecordedArg::of_real(value)}, {self});
  }
  return self;
}

}  // namespace

std::vector<std::int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) { return broadcast(a, b, "broadcast_shapes"); }

Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, OpKind::add, "add", "aten::add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, OpKind::sub, "sub", "aten::sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, OpKind::mul, "mul", "aten::mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(a, b, OpKind::div, "div", "aten::div"); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
namespace {
// A tensor-with-number op, recorded as ATen records it (the number as `other`).
Tensor scalar_op(const Tensor& a, double s, OpKind kind, const char* op, std::string_view aten, const char* recorded) {
  RecordOpScope scope;
  Tensor out = unary(a, kind, op, aten);
  if (scope.recording()) record_op(recorded, {RecordedArg::of(a), RecordedArg::of_real(s)}, {out});
  return out;
}
}  // namespace

Tensor operator+(const Tensor& a, double s) { return scalar_op(a, s, OpKind::add, "add", "aten::add", "aten.add.Tensor"); }
Tensor operator-(const Tensor& a, double s) { return scalar_op(a, s, OpKind::sub, "sub", "aten::sub", "aten.sub.Tensor"); }
Tensor operator*(const Tensor& a, double s) { return scalar_op(a, s, OpKind::mul, "mul", "aten::mul", "aten.mul.Tensor"); }
Tensor operator/(const Tensor& a, double s) { return scalar_op(a, s, OpKind::div, "div", "aten::div", "aten.div.Tensor"); }
Tensor operator+(double s, const Tensor& b) { return scalar_op(b, s, OpKind::add, "add", "aten::add", "aten.add.Tensor"); }
Tensor operator-(double s, const Tensor& b) {
  return scalar_op(b, s, OpKind::sub, "rsub", "aten::rsub", "aten.rsub.Scalar");
}
Tensor operator*(double s, const Tensor& b) { return scalar_op(b, s, OpKind::mul, "mul", "aten::mul", "aten.mul.Tensor"); }
// s / b as PyTorch's __rtruediv__ computes it: reciprocal(b) * s.
Tensor operator/(double s, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = unary(b, OpKind::div, "reciprocal", "aten::reciprocal") * s;
  if (scope.recording()) record_op("aten.div.Tensor", {RecordedArg::of_real(s), RecordedArg::of(b)}, {out});
  return out;
}
Tensor operator-(const Tensor& a) { return unary(a, OpKind::neg, "neg", "aten::neg"); }

Tensor& Tensor::add_(const Tensor& other) { return inplace(*this, other, OpKind::add, "add_", "aten::add_"); }
Tensor& Tensor::sub_(const Tensor& other) { return inplace(*this, other, OpKind::sub, "sub_", "aten::sub_"); }
Tensor& Tensor::mul_(const Tensor& other) { return inplace(*this, other, OpKind::mul, "mul_", "aten::mul_"); }
Tensor& Tensor::div_(const Tensor& other) { return inplace(*this, other, OpKind::div, "div_", "aten::div_"); }
Tensor& Tensor::add_(double v) { return inplace_scalar(*this, v, OpKind::add, "add_", "aten::add_"); }
Tensor& Tensor::sub_(double v) { return inplace_scalar(*this, v, OpKind::sub, "sub_", "aten::sub_"); }
Tensor& Tensor::mul_(double v) { return inplace_scalar(*this, v, OpKind::mul, "mul_", "aten::mul_"); }
Tensor& Tensor::div_(double v) { return inplace_scalar(*this, v, OpKind::div, "div_", "aten::div_"); }

Tensor gelu_unrecorded(const Tensor& x, std::string_view approximate) {
  if (approximate != "none" && approximate != "tanh") {
    fail("gelu: approximate argument must be either none or tanh, got '{}'", approximate);
  }
  return unary(x, OpKind::gelu, "gelu", "aten::gelu");
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  RecordOpScope scope;
  Tensor out = gelu_unrecorded(x, approximate);
  if (scope.recording()) {
    record_op("aten.gelu.default", {RecordedArg::of(x), RecordedArg::of_text(approximate).keyword("approximate")}, {out});
  }
  return out;
}
Tensor relu(const Tensor& x) { return unary(x, OpKind::relu, "relu", "aten::relu"); }
Tensor silu(const Tensor& x) { return unary(x, OpKind::silu, "silu", "aten::silu"); }
Tensor tanh(const Tensor& x) { return unary(x, OpKind::tanh, "tanh", "aten::tanh"); }
Tensor sigmoid(const Tensor& x) { return unary(x, OpKind::sigmoid, "sigmoid", "aten::sigmoid"); }
// exp and log are on autocast's fp32 list.
Tensor exp(const Tensor& x) {
  Tensor cast;
  return unary(detail::autocast_fp32(x, cast), OpKind::exp, "exp", "aten::exp");
}
Tensor log(const Tensor& x) {
  Tensor cast;
  return unary(detail::autocast_fp32(x, cast), OpKind::log, "log", "aten::log");
}

// sqrt, rsqrt, pow, sin, cos and abs: one kernel each (their backward in record_unary).
namespace {
// ATen's result dtype of a floating-point function of x: x's own when floating or complex, the
// default dtype for integers and bool.
ScalarType floating_result(const Tensor& x) {
  const ScalarType t = x.dtype();
  return is_floating_point(t) || is_complex(t) ? t : get_default_dtype();
}
}  // namespace

// sqrt, sin and cos: one kernel each (their backward in record_unary); rsqrt and pow are also on
// autocast's fp32 list, as exp and log are.
Tensor sqrt(const Tensor& x) { return unary(x, OpKind::sqrt, "sqrt", "aten::sqrt", floating_result(x)); }
Tensor sin(const Tensor& x) { return unary(x, OpKind::sin, "sin", "aten::sin", floating_result(x)); }
Tensor cos(const Tensor& x) { return unary(x, OpKind::cos, "cos", "aten::cos", floating_result(x)); }
Tensor rsqrt(const Tensor& x_arg) {
  Tensor cast;
  const Tensor& x = detail::autocast_fp32(x_arg, cast);
  return unary(x, OpKind::rsqrt, "rsqrt", "aten::rsqrt", floating_result(x));
}
// |x|: of a complex tensor, its real magnitude.
Tensor abs(const Tensor& x) {
  detail::check_defined(x, "abs", "self");
  return unary(x, OpKind::abs, "abs", "aten::abs", is_complex(x.dtype()) ? to_real(x.dtype()) : x.dtype());
}
Tensor pow(const Tensor& x_arg, double exponent) {
  RecordOpScope scope;
  Tensor cast;
  const Tensor& x = detail::autocast_fp32(x_arg, cast);
  detail::check_defined(x, "pow", "self");
  // An integer tensor to a whole power stays an integer tensor; to a fractional one it is floating.
  const bool whole = std::floor(exponent) == exponent;
  Tensor out;
  {
    autograd::NoGradGuard plain;  // its own backward, which needs the exponent
    out = unary(x, OpKind::pow, "pow", "aten::pow", whole ? x.dtype() : floating_result(x));
  }
  if (autograd::any_requires_grad({&x})) {  // dy e x^(e-1)
    autograd::record("PowBackward0", {&x}, {&out}, {x}, [exponent](Grads& g, Grads& s, const Node&) {
      return Grads{(g[0] * pow(s[0], exponent - 1.0)) * exponent};
    });
  }
  if (scope.recording()) {
    record_op("aten.pow.Tensor_Scalar", {RecordedArg::of(x_arg), RecordedArg::of_real(exponent)}, {out});
  }
  return out;
}
Tensor pow(double base, const Tensor& exponent_arg) {
  RecordOpScope scope;
  Tensor cast;
  const Tensor& exponent = detail::autocast_fp32(exponent_arg, cast);
  detail::check_defined(exponent, "pow", "exponent");
  Tensor out;
  {
    autograd::NoGradGuard plain;
    out = unary(exponent, OpKind::pow, "pow", "aten::pow", floating_result(exponent));
  }
  if (autograd::any_requires_grad({&exponent})) {  // dy base^x ln(base), from the saved output
    autograd::record("PowBackward2", {&exponent}, {&out}, {out}, [base](Grads& g, Grads& s, const Node&) {
      return Grads{(g[0] * s[0]) * std::log(base)};
    });
  }
  if (scope.recording()) {
    record_op("aten.pow.Scalar", {RecordedArg::of_real(base), RecordedArg::of(exponent_arg)}, {out});
  }
  return out;
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  detail::check_defined(x, "clamp", "self");
  if (!min && !max) fail("clamp: At least one of 'min' or 'max' must not be None");
  // A comparison with a constant per element: relu's kernel; its backward masks the gradient
  // (relu's backward kernel, from the saved input).
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, "aten::clamp");
  detail::dispatch(ctx, detail::elementwise_op(OpKind::relu, s.numel, s.dtype), "aten::clamp", s.device, s.numel == 0);
  if (autograd::any_requires_grad({&x})) {
    autograd::record("ClampBackward1", {&x}, {&out}, {x}, [](Grads& g, Grads& sv, const Node&) {
      return Grads{detail::elementwise_backward(OpKind::relu_backward, g[0], sv[0], "aten::clamp_backward")};
    });
  }
  return out;
}

Tensor dropout_unrecorded(const Tensor& x, double p, bool train) {
  detail::check_defined(x, "dropout", "input");
  if (p < 0 || p > 1) fail("dropout: dropout probability has to be between 0 and 1, but got {}", p);
  if (!train || p == 0) return x;
  // native_dropout: the output and a one-byte mask, which the backward multiplies by.
  const auto& s = impl_of(x);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, "aten::native_dropout");
  Tensor mask = detail::make_tensor(ctx, s.sizes, ScalarType::Bool, s.device, "aten::native_dropout");
  detail::dispatch(ctx, detail::elementwise_op(OpKind::dropout, s.numel, s.dtype), "aten::native_dropout", s.device,
                   s.numel == 0);
  if (autograd::any_requires_grad({&x})) {
    autograd::record("NativeDropoutBackward0", {&x}, {&out}, {mask}, [](Grads& g, Grads&, const Node&) {
      return Grads{unary(g[0], OpKind::mul, "native_dropout_backward", "aten::native_dropout_backward", std::nullopt, false)};
    });
  }
  return out;
}

Tensor dropout(const Tensor& x, double p, bool train) {
  RecordOpScope scope;
  Tensor out = dropout_unrecorded(x, p, train);
  if (scope.recording()) {
    record_op("aten.dropout.default", {RecordedArg::of(x), RecordedArg::of_real(p), RecordedArg::of_bool(train)}, {out});
  }
  return out;
}

// --- Matrix products ---

namespace {

void check_matmul_types(const Tensor& a, const Tensor& b, const char* op) {
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  detail::check_real(a, op, "self");  // the same dtype for both, below
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  if (x.dtype != y.dtype) {
    fail("{}: expected m1 and m2 to have the same dtype, but got: {} != {}", op, scalar_type_name(x.dtype),
         scalar_type_name(y.dtype));
  }
  detail::check_same(a, b, op);
}

[[noreturn]] void fail_shapes(const char* op, IntArrayRef a, IntArrayRef b) {
  fail("{}: mat1 and mat2 shapes cannot be multiplied ({} and {})", op, detail::format_matrix(a),
       detail::format_matrix(b));
}

// Makes the output and launches a gemm (batch == 0) or a bmm.
// The GEMM runs in a's dtype; the output is out_dtype (a's when not given: an fp8 GEMM writes
// the activations' dtype).
Tensor product_op(IntArrayRef out_sizes, const detail::TensorImpl& a, std::uint64_t batch, std::int64_t m,
                  std::int64_t n, std::int64_t k, bool batched, std::string_view aten,
                  std::optional<ScalarType> out_dtype = std::nullopt) {
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, out_sizes, out_dtype.value_or(a.dtype), a.device, aten);
  if (ctx) {
    OpDesc op;
    op.kind = batched ? OpKind::bmm : OpKind::gemm;
    // fp32 products on the TF32 matrix units unless the precision is "highest" (PyTorch's rule).
    const bool tf32 = a.dtype == ScalarType::Float && get_float32_matmul_precision() != "highest";
    op.dtype = tf32 ? DType::tf32 : to_runtime_dtype(a.dtype);
    op.batch = batch;
    op.m = static_cast<std::uint64_t>(m);
    op.n = static_cast<std::uint64_t>(n);
    op.k = static_cast<std::uint64_t>(k);
    detail::dispatch(ctx, op, aten, a.device, batch == 0 || m == 0 || n == 0 || k == 0);
  }
  return out;
}

// PyTorch's matmul folds an operand into the shape its GEMM takes with reshape (the batch dims
// into one for bmm; the leading dims into rows against a matrix), which copies an operand whose
// layout no view can fold (attention's q and k^T after a transpose). `expanded` is the operand's
// shape with its batch dims broadcast; `keep` its trailing dims the GEMM keeps. Returns the
// operand itself when a view folds it, else its contiguous copy (one copy kernel, before the
// product; the backward reads the copy, as PyTorch's does).
Tensor fold_for_matmul(const Tensor& t, IntArrayRef expanded, std::size_t keep) {
  const auto& s = impl_of(t);
  const std::size_t n = expanded.size();
  if (n <= keep + 1 && s.sizes.size() == n) return t;  // nothing to fold
  Sizes strides(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t from_end = n - i;
    if (from_end <= s.sizes.size()) {
      const std::size_t j = s.sizes.size() - from_end;
      if (s.sizes[j] == expanded[i]) strides[i] = s.strides[j];
    }
  }
  Sizes folded{detail::product(IntArrayRef(expanded.data(), n - keep))};
  folded.insert(folded.end(), expanded.end() - static_cast<std::ptrdiff_t>(keep), expanded.end());
  Sizes view;
  if (detail::view_strides(expanded, strides, folded, view)) return t;
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor copy = detail::make_tensor(ctx, expanded, s.dtype, s.device, "aten::clone");
  const std::int64_t numel = impl_of(copy).numel;
  detail::dispatch(ctx, detail::elementwise_op(OpKind::copy, numel, s.dtype), "aten::clone", s.device, numel == 0);
  return copy;
}

}  // namespace

Tensor matmul_unrecorded(const Tensor& a_arg, const Tensor& b_arg) {
  Tensor a_cast, b_cast;
  const Tensor& a = detail::autocast_lower(a_arg, a_cast);
  const Tensor& b = detail::autocast_lower(b_arg, b_cast);
  check_matmul_types(a, b, "matmul");
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  const std::size_t da = x.sizes.size();
  const std::size_t db = y.sizes.size();
  if (da == 0 || db == 0) {
    fail("matmul: both arguments to matmul need to be at least 1D, but they are {}D and {}D", da, db);
  }
  if (db <= 2) {
    // [..., m, k] x [k, n] or [k]: fold every leading dim of a into m; one gemm.
    const std::int64_t k = x.sizes.back();
    const std::int64_t kb = y.sizes.front();
    if (k != kb) {
      if (da == 1 && db == 1) {
        fail("matmul: inconsistent tensor size, expected tensor {} and src {} to have the same number of elements, "
             "but got {} and {} elements respectively",
             format_sizes(x.sizes), format_sizes(y.sizes), k, kb);
      }
      fail_shapes("matmul", x.sizes, y.sizes);
    }
    const std::int64_t n = db == 2 ? y.sizes[1] : 1;
    Sizes& out = detail::scratch(0);
    out.assign(x.sizes.begin(), x.sizes.end() - 1);
    if (db == 2) out.push_back(n);
    const std::int64_t m = detail::product(IntArrayRef(x.sizes.data(), da - 1));
    const Tensor folded = da >= 3 ? fold_for_matmul(a, x.sizes, 1) : a;
    Tensor result = product_op(out, x, 1, m, n, k, false, "aten::matmul");
    if (autograd::any_requires_grad({&a, &b})) {
      if (da < 2 || db < 2) detail::no_backward({&a, &b}, "matmul with a 1-D operand");
      // [..., m, k] x [k, n] as one mm over the folded rows: dA = dC B^T, dB = A^T dC (folded).
      autograd::record("MmBackward0", {&a, &b}, {&result}, {folded, b}, [k, n](Grads& g, Grads& s, const Node& nd) {
        Tensor ga, gb;
        if (nd.needs_input_grad(0)) ga = matmul(g[0], s[1].t());
        if (nd.needs_input_grad(1)) gb = mm(s[0].reshape({-1, k}).t(), g[0].reshape({-1, n}));
        return Grads{ga, gb};
      });
    }
    return result;
  }
  // b has batch dims: [..., m, k] x [..., k, n] with the batch dims broadcast; one bmm.
  const std::int64_t m = da >= 2 ? x.sizes[da - 2] : 1;
  const std::int64_t k = x.sizes.back();
  const std::int64_t kb = y.sizes[db - 2];
  const std::int64_t n = y.sizes[db - 1];
  if (k != kb) fail_shapes("matmul", x.sizes, y.sizes);
  const IntArrayRef batch_a(x.sizes.data(), da >= 2 ? da - 2 : 0);
  const IntArrayRef batch_b(y.sizes.data(), db - 2);
  Sizes out = broadcast(batch_a, batch_b, "matmul");
  const std::int64_t batch = detail::product(out);
  Tensor folded_a = a, folded_b = b;
  if (da >= 2) {
    Sizes expanded = out;
    expanded.push_back(m);
    expanded.push_back(k);
    folded_a = fold_for_matmul(a, expanded, 2);
  }
  {
    Sizes expanded = out;
    expanded.push_back(k);
    expanded.push_back(n);
    folded_b = fold_for_matmul(b, expanded, 2);
  }
  if (da >= 2) out.push_back(m);
  out.push_back(n);
  Tensor result = product_op(out, x, static_cast<std::uint64_t>(batch), m, n, k, true, "aten::matmul");
  if (autograd::any_requires_grad({&a, &b})) {
    if (da < 2) detail::no_backward({&a, &b}, "matmul with a 1-D operand");
    // Batched: dA = dC B^T and dB = A^T dC, each summed over the batch dims it was broadcast along.
    Sizes sa = x.sizes, sb = y.sizes;
    autograd::record("BmmBackward0", {&a, &b}, {&result}, {folded_a, folded_b}, [sa, sb](Grads& g, Grads& s, const Node& nd) {
      Tensor ga, gb;
      if (nd.needs_input_grad(0)) ga = detail::sum_to(matmul(g[0], s[1].transpose(-1, -2)), sa);
      if (nd.needs_input_grad(1)) gb = detail::sum_to(matmul(s[0].transpose(-1, -2), g[0]), sb);
      return Grads{ga, gb};
    });
  }
  return result;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = matmul_unrecorded(a, b);
  if (scope.recording()) record_op("aten.matmul.default", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}

Tensor mm_unrecorded(const Tensor& a_arg, const Tensor& b_arg) {
  Tensor a_cast, b_cast;
  const Tensor& a = detail::autocast_lower(a_arg, a_cast);
  const Tensor& b = detail::autocast_lower(b_arg, b_cast);
  check_matmul_types(a, b, "mm");
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  if (x.sizes.size() != 2) fail("mm: self must be a matrix, got {}", format_sizes(x.sizes));
  if (y.sizes.size() != 2) fail("mm: mat2 must be a matrix, got {}", format_sizes(y.sizes));
  if (x.sizes[1] != y.sizes[0]) fail_shapes("mm", x.sizes, y.sizes);
  Tensor result = product_op({x.sizes[0], y.sizes[1]}, x, 1, x.sizes[0], y.sizes[1], x.sizes[1], false, "aten::mm");
  if (autograd::any_requires_grad({&a, &b})) {
    autograd::record("MmBackward0", {&a, &b}, {&result}, {a, b}, [](Grads& g, Grads& s, const Node& nd) {
      return Grads{nd.needs_input_grad(0) ? mm(g[0], s[1].t()) : Tensor(), nd.needs_input_grad(1) ? mm(s[0].t(), g[0]) : Tensor()};
    });
  }
  return result;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = mm_unrecorded(a, b);
  if (scope.recording()) record_op("aten.mm.default", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}

Tensor bmm_unrecorded(const Tensor& a_arg, const Tensor& b_arg) {
  Tensor a_cast, b_cast;
  const Tensor& a = detail::autocast_lower(a_arg, a_cast);
  const Tensor& b = detail::autocast_lower(b_arg, b_cast);
  check_matmul_types(a, b, "bmm");
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  if (x.sizes.size() != 3) fail("bmm: batch1 must be a 3D tensor, got {}", format_sizes(x.sizes));
  if (y.sizes.size() != 3) fail("bmm: batch2 must be a 3D tensor, got {}", format_sizes(y.sizes));
  if (x.sizes[0] != y.sizes[0]) {
    fail("bmm: batch1 and batch2 must have same number of batches, got {} and {}", x.sizes[0], y.sizes[0]);
  }
  if (x.sizes[2] != y.sizes[1]) fail_shapes("bmm", x.sizes, y.sizes);
  Tensor result = product_op({x.sizes[0], x.sizes[1], y.sizes[2]}, x, static_cast<std::uint64_t>(x.sizes[0]),
                             x.sizes[1], y.sizes[2], x.sizes[2], true, "aten::bmm");
  if (autograd::any_requires_grad({&a, &b})) {
    autograd::record("BmmBackward0", {&a, &b}, {&result}, {a, b}, [](Grads& g, Grads& s, const Node& nd) {
      return Grads{nd.needs_input_grad(0) ? bmm(g[0], s[1].transpose(1, 2)) : Tensor(),
                   nd.needs_input_grad(1) ? bmm(s[0].transpose(1, 2), g[0]) : Tensor()};
    });
  }
  return result;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = bmm_unrecorded(a, b);
  if (scope.recording()) record_op("aten.bmm.default", {RecordedArg::of(a), RecordedArg::of(b)}, {out});
  return out;
}

Tensor addmm_unrecorded(const Tensor& bias_arg, const Tensor& a_arg, const Tensor& b_arg) {
  Tensor bias_cast, a_cast, b_cast;
  const Tensor& bias = detail::autocast_lower(bias_arg, bias_cast);
  const Tensor& a = detail::autocast_lower(a_arg, a_cast);
  const Tensor& b = detail::autocast_lower(b_arg, b_cast);
  check_matmul_types(a, b, "addmm");
  detail::check_defined(bias, "addmm", "self");
  detail::check_same(bias, a, "addmm");
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  if (x.sizes.size() != 2) fail("addmm: mat1 must be a matrix, got {}", format_sizes(x.sizes));
  if (y.sizes.size() != 2) fail("addmm: mat2 must be a matrix, got {}", format_sizes(y.sizes));
  if (x.sizes[1] != y.sizes[0]) fail_shapes("addmm", x.sizes, y.sizes);
  const Sizes out{x.sizes[0], y.sizes[1]};
  if (!detail::broadcasts_to(impl_of(bias).sizes, out)) {
    fail("addmm: the bias {} does not broadcast to the product's shape {}", format_sizes(impl_of(bias).sizes),
         format_sizes(out));
  }
  Tensor result = product_op(out, x, 1, x.sizes[0], y.sizes[1], x.sizes[1], false, "aten::addmm");
  if (autograd::any_requires_grad({&bias, &a, &b})) {
    Sizes sbias = impl_of(bias).sizes;
    autograd::record("AddmmBackward0", {&bias, &a, &b}, {&result}, {a, b},
                   [sbias](Grads& g, Grads& s, const Node& nd) {
                     return Grads{nd.needs_input_grad(0) ? detail::sum_to(g[0], sbias) : Tensor(),
                                  nd.needs_input_grad(1) ? mm(g[0], s[1].t()) : Tensor(),
                                  nd.needs_input_grad(2) ? mm(s[0].t(), g[0]) : Tensor()};
                   });
  }
  return result;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  RecordOpScope scope;
  Tensor out = addmm_unrecorded(bias, a, b);
  if (scope.recording()) {
    record_op("aten.addmm.default", {RecordedArg::of(bias), RecordedArg::of(a), RecordedArg::of(b)}, {out});
  }
  return out;
}

Tensor _scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b, const Tensor& bias,
                  std::optional<ScalarType> out_dtype) {
  check_matmul_types(a, b, "_scaled_mm");
  const auto& x = impl_of(a);
  const auto& y = impl_of(b);
  if (x.dtype != kFloat8_e4m3fn) {
    fail("_scaled_mm: expected mat1 and mat2 in Float8_e4m3fn, got {}", scalar_type_name(x.dtype));
  }
  if (x.sizes.size() != 2 || y.sizes.size() != 2) {
    fail("_scaled_mm: expected 2-D matrices, got {}D and {}D", x.sizes.size(), y.sizes.size());
  }
  if (x.sizes[1] != y.sizes[0]) fail_shapes("_scaled_mm", x.sizes, y.sizes);
  for (const Tensor* scale : {&scale_a, &scale_b}) {
    detail::check_defined(*scale, "_scaled_mm", scale == &scale_a ? "scale_a" : "scale_b");
    if (impl_of(*scale).dtype != kFloat32 || impl_of(*scale).numel != 1) {
      fail("_scaled_mm: expected each scale as a single Float value (per-tensor scaling), got {} of {} elements",
           scalar_type_name(impl_of(*scale).dtype), impl_of(*scale).numel);
    }
  }
  const ScalarType out_type = out_dtype.value_or(x.dtype);
  if (bias.defined() && (impl_of(bias).numel != y.sizes[1] || impl_of(bias).dtype != out_type)) {
    fail("_scaled_mm: expected a bias of {} {} values, got {} of {}", y.sizes[1], scalar_type_name(out_type),
         impl_of(bias).numel, scalar_type_name(impl_of(bias).dtype));
  }
  const std::int64_t out[2] = {x.sizes[0], y.sizes[1]};
  detail::no_backward({&a, &b, &bias}, "_scaled_mm");
  return product_op(IntArrayRef(out, 2), x, 1, x.sizes[0], y.sizes[1], x.sizes[1], false, "aten::_scaled_mm",
                    out_type);
}

namespace nn::functional {

Tensor pad(const Tensor& input, IntArrayRef pad, double) {
  detail::check_defined(input, "pad", "input");
  const auto& s = impl_of(input);
  if (pad.size() % 2 != 0 || pad.size() / 2 > s.sizes.size()) {
    fail("pad: Padding length must be divisible by 2 and at most twice the input's {} dims, got {}", s.sizes.size(),
         pad.size());
  }
  Sizes out = s.sizes;
  for (std::size_t i = 0; i < pad.size() / 2; ++i) {
    std::int64_t& extent = out[out.size() - 1 - i];
    extent += pad[2 * i] + pad[2 * i + 1];
    if (extent < 0) {
      fail("pad: the padded size of dim {} would be {}, which is negative", out.size() - 1 - i, extent);
    }
  }
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor result = detail::make_tensor(ctx, out, s.dtype, s.device, "aten::constant_pad_nd");
  const std::int64_t numel = impl_of(result).numel;
  detail::dispatch(ctx, detail::elementwise_op(OpKind::copy, numel, s.dtype), "aten::constant_pad_nd", s.device,
                   numel == 0);
  return result;
}

Tensor linear_unrecorded(const Tensor& input_arg, const Tensor& weight_arg, const Tensor& bias_arg) {
  Tensor input_cast, weight_cast, bias_cast;
  const Tensor& input = detail::autocast_lower(input_arg, input_cast);
  const Tensor& weight = detail::autocast_lower(weight_arg, weight_cast);
  const Tensor& bias = detail::autocast_lower(bias_arg, bias_cast);
  detail::check_defined(input, "linear", "input");
  detail::check_defined(weight, "linear", "weight");
  // An fp8 weight under fp8 autocast: the input quantised to fp8 (one pass), the GEMM in fp8
  // with the scales in its epilogue, the output in the input's dtype.
  std::optional<ScalarType> out_dtype;
  Tensor quantised;
  if (impl_of(weight).dtype == kFloat8_e4m3fn && impl_of(input).dtype != kFloat8_e4m3fn && fp8::autocast_enabled()) {
    out_dtype = impl_of(input).dtype;
    quantised = input.to(kFloat8_e4m3fn);
  }
  const Tensor& gemm_input = quantised.defined() ? quantised : input;
  check_matmul_types(gemm_input, weight, "linear");
  const auto& x = impl_of(gemm_input);
  const auto& w = impl_of(weight);
  if (w.sizes.size() != 2) fail("linear: weight must be 2-D [out_features, in_features], got {}", format_sizes(w.sizes));
  if (x.sizes.empty()) fail("linear: input must be at least 1-D, got a 0-dim tensor");
  const std::int64_t out_features = w.sizes[0];
  const std::int64_t in_features = w.sizes[1];
  const std::int64_t m = detail::product(IntArrayRef(x.sizes.data(), x.sizes.size() - 1));
  if (x.sizes.back() != in_features) {
    // As libtorch: the folded input against the transposed weight.
    fail_shapes("linear", {m, x.sizes.back()}, {in_features, out_features});
  }
  if (bias.defined()) {
    detail::check_same(bias, input, "linear");
    const auto& b = impl_of(bias);
    if (b.numel != out_features || b.sizes.size() > 1) {
      fail("linear: bias of shape {} does not match out_features ({})", format_sizes(b.sizes), out_features);
    }
  }
  if (quantised.defined()) detail::no_backward({&input, &weight, &bias}, "linear with fp8 weights");
  Sizes& out = detail::scratch(0);
  out.assign(x.sizes.begin(), x.sizes.end() - 1);
  out.push_back(out_features);
  Tensor result = product_op(out, x, 1, m, out_features, in_features, false, "aten::linear", out_dtype);
  if (autograd::any_requires_grad({&input, &weight, &bias})) {
    // dX = dY W (one GEMM), dW = dY^T X over the folded rows (another), db = dY summed over rows.
    autograd::record("LinearBackward0", {&input, &weight, &bias}, {&result}, {input, weight},
                   [in_features, out_features](Grads& g, Grads& s, const Node& nd) {
                     Tensor gx, gw, gb;
                     if (nd.needs_input_grad(0)) gx = matmul(g[0], s[1]);
                     if (nd.needs_input_grad(1)) {
                       gw = mm(g[0].reshape({-1, out_features}).t(), s[0].reshape({-1, in_features}));
                     }
                     if (nd.needs_input_grad(2)) gb = detail::sum_to(g[0], {out_features});
                     return Grads{gx, gw, gb};
                   });
  }
  return result;
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  RecordOpScope scope;
  Tensor out = linear_unrecorded(input, weight, bias);
  if (scope.recording()) {
    record_op("aten.linear.default", {RecordedArg::of(input), RecordedArg::of(weight), RecordedArg::of(bias)}, {out});
  }
  return out;
}

}  // namespace nn::functional

// --- Row-wise ops ---

namespace {

// A [rows, cols] row-wise op of `kind` over x along dim.
Tensor rowwise(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype, OpKind kind, const char* op,
               std::string_view aten) {
  detail::check_defined(x, op, "self");
  detail::check_real(x, op, "self");
  const auto& s = impl_of(x);
  const auto d = detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), op);
  const std::int64_t cols = s.sizes.empty() ? 1 : s.sizes[static_cast<std::size_t>(d)];
  const ScalarType out_type = dtype.value_or(s.dtype);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, out_type, s.device, aten);
  if (ctx) {
    OpDesc o;
    o.kind = kind;
    o.dtype = to_runtime_dtype(out_type);
    o.cols = static_cast<std::uint64_t>(cols);
    o.rows = cols == 0 ? 0 : static_cast<std::uint64_t>(s.numel / cols);
    detail::dispatch(ctx, o, aten, s.device, s.numel == 0);
  }
  if (autograd::any_requires_grad({&x})) {
    // From the saved output: one softmax_backward kernel (log_softmax's costs the same).
    const ScalarType in_type = s.dtype;
    const bool log = std::string_view(op) == "log_softmax";
    autograd::record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&x}, {&out}, {out},
                   [d, in_type, log](Grads& g, Grads& sv, const Node&) {
                     return Grads{detail::softmax_backward(g[0], sv[0], d, in_type,
                                                           log ? "aten::_log_softmax_backward_data"
                                                               : "aten::_softmax_backward_data")};
                   });
  }
  return out;
}

Tensor norm(const Tensor& x, IntArrayRef shape, const Tensor& weight, const Tensor& bias, OpKind kind, const char* op,
            std::string_view aten) {
  detail::check_defined(x, op, "input");
  detail::check_real(x, op, "input");
  const auto& s = impl_of(x);
  if (shape.empty()) {
    fail("{}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got "
         "normalized_shape = []",
         op);
  }
  const bool fits = s.sizes.size() >= shape.size() &&
                    std::equal(shape.begin(), shape.end(), s.sizes.end() - static_cast<std::ptrdiff_t>(shape.size()));
  if (!fits) {
    std::string expected = "[*";
    for (std::int64_t v : shape) expected += ", " + std::to_string(v);
    expected += "]";
    fail("{}: Given normalized_shape={}, expected input with shape {}, but got input of size{}", op,
         format_sizes(shape), expected, format_sizes(s.sizes));
  }
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{weight, "weight"}, {bias, "bias"}}) {
    if (!t.defined()) continue;
    if (!(IntArrayRef(t.sizes()) == shape)) {
      fail("{}: Expected {} to be of same shape as normalized_shape, but got {} of shape {} and normalized_shape = {}",
           op, name, name, format_sizes(t.sizes()), format_sizes(shape));
    }
    if (t.device().type() != s.device.type()) {
      fail("{}: Expected all tensors to be on the same device, but found at least two devices, {} and {}!", op,
           s.device.str(), t.device().str());
    }
  }
  const std::int64_t cols = detail::product(shape);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, aten);
  const bool grad = autograd::any_requires_grad({&x, &weight, &bias});
  // Training keeps each row's statistics (mean and reciprocal deviation in fp32; RMSNorm only the
  // latter) for the backward, as native_layer_norm returns them.
  Tensor stats;
  if (grad) {
    const std::int64_t rows = cols == 0 ? 0 : s.numel / cols;
    const std::int64_t n[1] = {rows * (kind == OpKind::layernorm ? 2 : 1)};
    stats = detail::make_tensor(ctx, IntArrayRef(n, 1), ScalarType::Float, s.device, aten);
  }
  if (ctx) {
    OpDesc o;
    o.kind = kind;
    o.dtype = to_runtime_dtype(s.dtype);
    o.cols = static_cast<std::uint64_t>(cols);
    o.rows = cols == 0 ? 0 : static_cast<std::uint64_t>(s.numel / cols);
    detail::dispatch(ctx, o, aten, s.device, s.numel == 0);
  }
  if (grad) {
    const bool layer = kind == OpKind::layernorm;
    autograd::record(layer ? "NativeLayerNormBackward0" : "RmsNormBackward0", {&x, &weight, &bias}, {&out},
                   {x, weight, bias, stats}, [kind, cols, layer](Grads& g, Grads& sv, const Node& n) {
                     auto [dx, dw, db] = detail::norm_backward(
                         kind, g[0], sv[0], sv[1], sv[2], cols,
                         {n.needs_input_grad(0), n.needs_input_grad(1), n.needs_input_grad(2)},
                         layer ? "aten::native_layer_norm_backward" : "aten::_fused_rms_norm_backward");
                     return Grads{dx, dw, db};
                   });
  }
  return out;
}

}  // namespace

// Under autocast, softmax and log_softmax write fp32 (autocast's fp32_set_opt_dtype) and
// layer_norm runs in fp32 (its inputs cast).
Tensor softmax_unrecorded(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype) {
  return rowwise(x, dim, autocast::fp32_output_dtype(x, dtype), OpKind::softmax, "softmax", "aten::softmax");
}

Tensor softmax(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype) {
  RecordOpScope scope;
  Tensor out = softmax_unrecorded(x, dim, dtype);
  if (scope.recording()) {
    record_op("aten.softmax.int", {RecordedArg::of(x), RecordedArg::of(dim), dtype ? RecordedArg::of(*dtype) : RecordedArg::none()},
              {out});
  }
  return out;
}

Tensor log_softmax(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype) {
  RecordOpScope scope;
  Tensor out =
      rowwise(x, dim, autocast::fp32_output_dtype(x, dtype), OpKind::softmax, "log_softmax", "aten::log_softmax");
  if (scope.recording()) {
    record_op("aten.log_softmax.int",
              {RecordedArg::of(x), RecordedArg::of(dim), dtype ? RecordedArg::of(*dtype) : RecordedArg::none()}, {out});
  }
  return out;
}

Tensor layer_norm_unrecorded(const Tensor& x_arg, IntArrayRef normalized_shape, const Tensor& weight_arg, const Tensor& bias_arg,
                  double) {
  Tensor x_cast, weight_cast, bias_cast;
  return norm(detail::autocast_fp32(x_arg, x_cast), normalized_shape, detail::autocast_fp32(weight_arg, weight_cast),
              detail::autocast_fp32(bias_arg, bias_cast), OpKind::layernorm, "layer_norm", "aten::layer_norm");
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  RecordOpScope scope;
  Tensor out = layer_norm_unrecorded(x, normalized_shape, weight, bias, eps);
  if (scope.recording()) {
    record_op("aten.layer_norm.default",
              {RecordedArg::of(x), RecordedArg::of(normalized_shape), RecordedArg::of(weight), RecordedArg::of(bias),
               RecordedArg::of_real(eps)},
              {out});
  }
  return out;
}

Tensor rms_norm_unrecorded(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, std::optional<double>) {
  return norm(x, normalized_shape, weight, Tensor(), OpKind::rmsnorm, "rms_norm", "aten::rms_norm");
}

Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, std::optional<double> eps) {
  RecordOpScope scope;
  Tensor out = rms_norm_unrecorded(x, normalized_shape, weight, eps);
  if (scope.recording()) {
    record_op("aten.rms_norm.default",
              {RecordedArg::of(x), RecordedArg::of(normalized_shape), RecordedArg::of(weight),
               eps ? RecordedArg::of_real(*eps) : RecordedArg::none()},
              {out});
  }
  return out;
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, std::int64_t k, std::int64_t dim, bool, bool) {
  detail::check_defined(x, "topk", "self");
  detail::no_backward({&x}, "topk");
  const auto& s = impl_of(x);
  const auto d = static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "topk"));
  const std::int64_t cols = s.sizes.empty() ? 1 : s.sizes[d];
  if (k < 0 || k > cols) fail("topk: selected index k out of range (k = {}, dim {} has size {})", k, d, cols);
  Sizes out_sizes = s.sizes;
  if (!out_sizes.empty()) out_sizes[d] = k;
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor values = detail::make_tensor(ctx, out_sizes, s.dtype, s.device, "aten::topk");
  Tensor indices = detail::make_tensor(ctx, out_sizes, ScalarType::Long, s.device, "aten::topk");
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::topk;
    o.dtype = to_runtime_dtype(s.dtype);
    o.cols = static_cast<std::uint64_t>(cols);
    o.rows = cols == 0 ? 0 : static_cast<std::uint64_t>(s.numel / cols);
    o.k = static_cast<std::uint64_t>(k);
    detail::dispatch(ctx, o, "aten::topk", s.device, s.numel == 0 || k == 0);
  }
  return {std::move(values), std::move(indices)};
}

Tensor argmax(const Tensor& x, std::optional<std::int64_t> dim, bool keepdim) {
  detail::check_defined(x, "argmax", "self");
  const auto& s = impl_of(x);
  Sizes out_sizes;
  std::int64_t cols = s.numel;
  if (dim) {
    const auto d = static_cast<std::size_t>(detail::wrap_dim(*dim, static_cast<std::int64_t>(s.sizes.size()), "argmax"));
    cols = s.sizes.empty() ? 1 : s.sizes[d];
    out_sizes = s.sizes;
    if (!out_sizes.empty()) {
      if (keepdim) {
        out_sizes[d] = 1;
      } else {
        out_sizes.erase(out_sizes.begin() + static_cast<std::ptrdiff_t>(d));
      }
    }
    if (cols == 0) fail("argmax: Expected reduction dim {} to have non-zero size.", d);
  } else {
    if (s.numel == 0) fail("argmax: Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) out_sizes.assign(s.sizes.size(), 1);
  }
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, out_sizes, ScalarType::Long, s.device, "aten::argmax");
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::softmax;
    o.dtype = to_runtime_dtype(s.dtype);
    o.cols = static_cast<std::uint64_t>(cols);
    o.rows = static_cast<std::uint64_t>(s.numel / cols);
    detail::dispatch(ctx, o, "aten::argmax", s.device, s.numel == 0);
  }
  return out;
}

// --- Shape ops ---

Tensor cat_unrecorded(const std::vector<Tensor>& tensors, std::int64_t dim) {
  if (tensors.empty()) fail("cat: expected a non-empty list of Tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) fail("cat: expected a defined tensor for tensor number {} in the list", i);
  }
  // As ATen: a 1-D empty tensor (the legacy empty form) may stand beside tensors of any shape and
  // adds nothing; the first other tensor sets the shape.
  const auto legacy_empty = [](const detail::TensorImpl& t) { return t.sizes.size() == 1 && t.sizes[0] == 0; };
  std::size_t lead = 0;
  while (lead + 1 < tensors.size() && legacy_empty(impl_of(tensors[lead]))) ++lead;
  const auto& first = impl_of(tensors[lead]);
  const auto n = static_cast<std::int64_t>(first.sizes.size());
  if (n == 0) fail("cat: zero-dimensional tensor (at position {}) cannot be concatenated", lead);
  const auto d = static_cast<std::size_t>(detail::wrap_dim(dim, n, "cat"));
  Sizes out = first.sizes;
  out[d] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = impl_of(tensors[i]);
    if (legacy_empty(t) && !legacy_empty(first)) {
      if (t.dtype != first.dtype) {
        fail("cat: expected all tensors to have the same dtype, but got {} and {} for tensor number {} in the list",
             scalar_type_name(first.dtype), scalar_type_name(t.dtype), i);
      }
      continue;
    }
    if (t.sizes.size() != first.sizes.size()) {
      fail("cat: Tensors must have same number of dimensions: got {} and {}", first.sizes.size(), t.sizes.size());
    }
    if (t.dtype != first.dtype) {
      fail("cat: expected all tensors to have the same dtype, but got {} and {} for tensor number {} in the list",
           scalar_type_name(first.dtype), scalar_type_name(t.dtype), i);
    }
    if (t.device.type() != first.device.type()) {
      fail("cat: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
           first.device.str(), t.device.str());
    }
    for (std::size_t j = 0; j < t.sizes.size(); ++j) {
      if (j != d && t.sizes[j] != first.sizes[j]) {
        fail("cat: Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor "
             "number {} in the list.",
             d, first.sizes[j], t.sizes[j], i);
      }
    }
    out[d] += t.sizes[d];
  }
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor result = detail::make_tensor(ctx, out, first.dtype, first.device, "aten::cat");
  const std::int64_t numel = impl_of(result).numel;
  detail::dispatch(ctx, detail::elementwise_op(OpKind::copy, numel, first.dtype), "aten::cat", first.device,
                   numel == 0);
  const bool grad = std::any_of(tensors.begin(), tensors.end(),
                                [](const Tensor& t) { return autograd::any_requires_grad({&t}); });
  if (grad) {
    // Each input's gradient is its slice of the output's: a view, no kernel.
    std::vector<const Tensor*> inputs;
    for (const Tensor& t : tensors) inputs.push_back(&t);
    std::vector<std::int64_t> extents;  // -1: a legacy empty tensor, which takes no gradient
    for (const Tensor& t : tensors) {
      extents.push_back(legacy_empty(impl_of(t)) && !legacy_empty(first) ? -1 : t.size(static_cast<std::int64_t>(d)));
    }
    const auto dim_d = static_cast<std::int64_t>(d);
    autograd::record("CatBackward0", inputs, {&result}, {}, [extents, dim_d](Grads& g, Grads&, const Node&) {
      Grads parts;
      std::int64_t start = 0;
      for (std::int64_t e : extents) {
        parts.push_back(e < 0 ? Tensor() : g[0].narrow(dim_d, start, e));
        start += std::max<std::int64_t>(e, 0);
      }
      return parts;
    });
  }
  return result;
}

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  RecordOpScope scope;
  Tensor out = cat_unrecorded(tensors, dim);
  if (scope.recording()) record_op("aten.cat.default", {RecordedArg::of(tensors), RecordedArg::of(dim)}, {out});
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  if (tensors.empty()) fail("stack: expects a non-empty TensorList");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) fail("stack: expected a defined tensor at entry {}", i);
    if (tensors[i].sizes() != tensors[0].sizes()) {
      fail("stack: stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
           format_sizes(tensors[0].sizes()), format_sizes(tensors[i].sizes()), i);
    }
  }
  const auto d = detail::wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) { return x.transpose(dim0, dim1); }
Tensor reshape(const Tensor& x, IntArrayRef sizes) { return x.reshape(sizes); }
Tensor flatten(const Tensor& x, std::int64_t start_dim, std::int64_t end_dim) { return x.flatten(start_dim, end_dim); }
Tensor permute(const Tensor& x, IntArrayRef dims) { return x.permute(dims); }
Tensor unsqueeze(const Tensor& x, std::int64_t dim) { return x.unsqueeze(dim); }
Tensor squeeze(const Tensor& x, std::int64_t dim) { return x.squeeze(dim); }
Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  return x.narrow(dim, start, length);
}
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim) { return x.split(split_size, dim); }
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) { return x.chunk(chunks, dim); }

// --- Transformer blocks ---

Tensor scaled_dot_product_attention_unrecorded(const Tensor& query_arg, const Tensor& key_arg, const Tensor& value_arg,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal, std::optional<double>,
                                    bool) {
  Tensor query_cast, key_cast, value_cast;
  const Tensor& query = detail::autocast_lower(query_arg, query_cast);
  const Tensor& key = detail::autocast_lower(key_arg, key_cast);
  const Tensor& value = detail::autocast_lower(value_arg, value_cast);
  const char* op = "scaled_dot_product_attention";
  detail::check_defined(query, op, "query");
  detail::check_defined(key, op, "key");
  detail::check_defined(value, op, "value");
  detail::check_real(query, op, "query");
  detail::check_real(key, op, "key");
  detail::check_real(value, op, "value");
  const auto& q = impl_of(query);
  const auto& k = impl_of(key);
  const auto& v = impl_of(value);
  // Key and value in fp8 with a 16-bit query: an fp8 KV cache, dequantised inside the attention
  // kernel as vLLM's and TensorRT-LLM's kernels do (PyTorch's own SDPA refuses it).
  const bool fp8_kv = k.dtype == kFloat8_e4m3fn && v.dtype == kFloat8_e4m3fn &&
                      (q.dtype == kFloat16 || q.dtype == kBFloat16);
  if (!fp8_kv && (q.dtype != k.dtype || q.dtype != v.dtype)) {
    fail("{}: Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} and "
         "value.dtype: {} instead.",
         op, scalar_type_name(q.dtype), scalar_type_name(k.dtype), scalar_type_name(v.dtype));
  }
  if (!fp8_kv) {
    detail::check_same(query, key, op);
    detail::check_same(query, value, op);
  } else {
    detail::check_same(key, value, op);
    if (q.device.type() != k.device.type()) {
      fail("{}: Expected all tensors to be on the same device, but found at least two devices, {} and {}!", op,
           q.device.str(), k.device.str());
    }
  }
  const std::size_t n = q.sizes.size();
  if (n < 3 || k.sizes.size() != n || v.sizes.size() != n) {
    fail("{}: expected query, key and value of the same rank, at least 3-D ([..., heads, seq, head_dim]), got query "
         "{}, key {}, value {}",
         op, format_sizes(q.sizes), format_sizes(k.sizes), format_sizes(v.sizes));
  }
  if (!std::equal(q.sizes.begin(), q.sizes.end() - 3, k.sizes.begin()) ||
      !std::equal(q.sizes.begin(), q.sizes.end() - 3, v.sizes.begin())) {
    fail("{}: the batch dims of query {}, key {} and value {} must match", op, format_sizes(q.sizes),
         format_sizes(k.sizes), format_sizes(v.sizes));
  }
  const std::int64_t heads = q.sizes[n - 3], seq_q = q.sizes[n - 2], head_dim = q.sizes[n - 1];
  const std::int64_t kv_heads = k.sizes[n - 3], seq_kv = k.sizes[n - 2];
  if (k.sizes[n - 1] != head_dim) {
    fail("{}: query and key must have the same head dim, got query {} and key {}", op, format_sizes(q.sizes),
         format_sizes(k.sizes));
  }
  if (v.sizes[n - 3] != kv_heads || v.sizes[n - 2] != seq_kv) {
    fail("{}: key and value must have the same heads and sequence length, got key {} and value {}", op,
         format_sizes(k.sizes), format_sizes(v.sizes));
  }
  if (v.sizes[n - 1] != head_dim) {
    fail("{}: a value head dim ({}) other than query's ({}) is not supported", op, v.sizes[n - 1], head_dim);
  }
  if (kv_heads == 0 || heads % kv_heads != 0) {
    fail("{}: number of heads in query ({}) must be a multiple of the number of heads in key/value ({})", op, heads,
         kv_heads);
  }
  if (dropout_p < 0 || dropout_p > 1) fail("{}: dropout_p must be in [0, 1], got {}", op, dropout_p);
  if (is_causal && attn_mask.defined()) {
    fail("{}: Explicit attn_mask should not be set when is_causal=True", op);
  }
  if (is_causal && seq_q > seq_kv) {
    fail("{}: is_causal needs seq_q ({}) <= seq_kv ({})", op, seq_q, seq_kv);
  }
  if (attn_mask.defined()) {
    Sizes scores(q.sizes.begin(), q.sizes.end() - 1);
    scores.push_back(seq_kv);
    if (!detail::broadcasts_to(attn_mask.sizes(), scores)) {
      fail("{}: attn_mask of shape {} does not broadcast to the scores' shape {}", op, format_sizes(attn_mask.sizes()),
           format_sizes(scores));
    }
  }
  const std::int64_t batch = detail::product(IntArrayRef(q.sizes.data(), n - 3));
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, q.sizes, q.dtype, q.device, "aten::scaled_dot_product_attention");
  const bool backward = autograd::any_requires_grad({&query, &key, &value});
  const std::uint8_t backends = detail::sdp_backends_of(sdp_enabled_mask());  // the backward follows them
  Tensor kept;  // what the implementation keeps for the backward (flash: the log-sum-exp; unfused: the probabilities)
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::attention;
    o.dtype = to_runtime_dtype(q.dtype);
    o.batch = static_cast<std::uint64_t>(batch);
    o.heads = static_cast<std::uint64_t>(heads);
    o.kv_heads = static_cast<std::uint64_t>(kv_heads);
    o.seq_q = static_cast<std::uint64_t>(seq_q);
    o.seq_kv = static_cast<std::uint64_t>(seq_kv);
    o.head_dim = static_cast<std::uint64_t>(head_dim);
    o.causal = is_causal;
    o.dropout = dropout_p > 0;
    o.sdp_backends = backends;
    if (fp8_kv) o.kv_dtype = to_runtime_dtype(k.dtype);
    const bool empty = batch == 0 || heads == 0 || seq_q == 0 || seq_kv == 0 || head_dim == 0;
    // The implementation's own memory (RankContext::op_memory): held around the launch, and what
    // it leaves for the backward kept with the autograd node when there is one.
    const runtime::RankContext::OpMemory extra =
        empty || !q.device.is_cuda() ? runtime::RankContext::OpMemory{} : ctx->op_memory(o);
    const std::uint64_t transient_bytes = extra.workspace_bytes + (backward ? 0 : extra.saved_bytes);
    Tensor workspace;
    if (transient_bytes > 0) {
      workspace = detail::make_tensor(ctx, {static_cast<std::int64_t>(transient_bytes)}, ScalarType::Bool, q.device,
                                      "aten::scaled_dot_product_attention workspace");
    }
    if (backward && extra.saved_bytes > 0) {
      kept = detail::make_tensor(ctx, {static_cast<std::int64_t>(extra.saved_bytes)}, ScalarType::Bool, q.device,
                                 "aten::scaled_dot_product_attention saved");
    }
    detail::dispatch(ctx, o, "aten::scaled_dot_product_attention", q.device, empty);
  }
  if (backward) {
    if (fp8_kv || attn_mask.defined()) detail::no_backward({&query, &key, &value}, "scaled_dot_product_attention with "
                                                                                   "an fp8 KV cache or a mask");
    // Q, K, V, the output and what the implementation left for its backward.
    autograd::record("ScaledDotProductFlashAttentionBackward0", {&query, &key, &value}, {&out},
                   {query, key, value, out, kept},
                   [is_causal, dropout = dropout_p > 0, backends](Grads& g, Grads& s, const Node&) {
                     auto [dq, dk, dv] = detail::attention_backward(g[0], s[0], s[1], s[2], is_causal, dropout, backends);
                     return Grads{dq, dk, dv};
                   });
  }
  return out;
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal, std::optional<double> scale,
                                    bool enable_gqa) {
  RecordOpScope scope;
  Tensor out = scaled_dot_product_attention_unrecorded(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  if (scope.recording()) {
    record_op("aten.scaled_dot_product_attention.default",
              {RecordedArg::of(query), RecordedArg::of(key), RecordedArg::of(value), RecordedArg::of(attn_mask),
               RecordedArg::of_real(dropout_p), RecordedArg::of_bool(is_causal),
               (scale ? RecordedArg::of_real(*scale) : RecordedArg::none()).keyword("scale"),
               RecordedArg::of_bool(enable_gqa).keyword("enable_gqa")},
              {out});
  }
  return out;
}

Tensor embedding_unrecorded(const Tensor& weight, const Tensor& indices) {
  detail::check_defined(weight, "embedding", "weight");
  detail::check_defined(indices, "embedding", "indices");
  const auto& w = impl_of(weight);
  const auto& i = impl_of(indices);
  if (i.dtype != ScalarType::Long && i.dtype != ScalarType::Int) {
    fail("embedding: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
         "but got {} instead (while checking arguments for embedding)",
         scalar_type_name(i.dtype));
  }
  if (w.sizes.size() != 2) fail("embedding: 'weight' must be 2-D, got {}", format_sizes(w.sizes));
  if (w.device.type() != i.device.type()) {
    fail("embedding: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
         w.device.str(), i.device.str());
  }
  Sizes out = i.sizes;
  out.push_back(w.sizes[1]);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor result = detail::make_tensor(ctx, out, w.dtype, w.device, "aten::embedding");
  if (ctx) {
    OpDesc o;
    o.kind = OpKind::embedding;
    o.dtype = to_runtime_dtype(w.dtype);
    o.rows = static_cast<std::uint64_t>(i.numel);
    o.cols = static_cast<std::uint64_t>(w.sizes[1]);
    o.vocab = static_cast<std::uint64_t>(w.sizes[0]);
    detail::dispatch(ctx, o, "aten::embedding", w.device, o.rows == 0 || o.cols == 0 || o.vocab == 0);
  }
  if (autograd::any_requires_grad({&weight})) {
    const std::int64_t vocab = w.sizes[0];
    autograd::record("EmbeddingBackward0", {&weight}, {&result}, {indices}, [vocab](Grads& g, Grads&, const Node&) {
      return Grads{detail::embedding_backward(g[0], vocab)};
    });
  }
  return result;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  RecordOpScope scope;
  Tensor out = embedding_unrecorded(weight, indices);
  if (scope.recording()) record_op("aten.embedding.default", {RecordedArg::of(weight), RecordedArg::of(indices)}, {out});
  return out;
}

}  // namespace syntorch::torch
