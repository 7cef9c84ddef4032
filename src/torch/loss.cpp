// Reductions and losses: sum, mean, nll_loss and cross_entropy, with their backward.

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch {

using detail::Grads;
using detail::impl_of;
using runtime::OpKind;


Tensor sum(const Tensor& x) {
  RecordOpScope scope;
  detail::check_defined(x, "sum", "self");
  detail::check_real(x, "sum", "self");
  // fp32 under autocast (its fp32_set_opt_dtype list); integer and bool inputs sum to int64.
  const ScalarType type = autocast::fp32_output_dtype(x, std::nullopt).value_or(detail::sum_dtype(x.dtype()));
  Tensor out = detail::reduction(x.numel(), type, x.device(), {}, "aten::sum");
  if (autograd::any_requires_grad({&x})) {
    detail::Sizes in = x.sizes();
    // The gradient broadcast back: a view, no kernel.
    autograd::record("SumBackward0", {&x}, {&out}, {}, [in](Grads& g, Grads&, const autograd::Node&) {
      return Grads{g[0].expand(in)};
    });
  }
  if (scope.recording()) {
    if (type != x.dtype()) {  // autocast's fp32 sum
      record_op("aten.sum.default", {RecordedArg::of(x), RecordedArg::of(type).keyword("dtype")}, {out});
    } else {
      record_op("aten.sum.default", {RecordedArg::of(x)}, {out});
    }
  }
  return out;
}

namespace {

// A reduction over `dims` (each once; kept as size 1 with keepdim): one kernel named `name`. Its
// backward broadcasts the gradient back over the input, a view for a sum; a mean also divides
// by the count, one kernel over the input's size.
Tensor reduce_dims(const Tensor& x, IntArrayRef dims, bool keepdim, ScalarType type, const char* op,
                   std::string_view aten, bool mean) {
  const auto& s = impl_of(x);
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  std::vector<bool> reduced(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)), false);
  for (std::int64_t d : dims) {
    const auto w = static_cast<std::size_t>(detail::wrap_dim(d, n, op));
    if (reduced[w]) detail::fail("{}: dim {} appears multiple times in the list of dims", op, w);
    reduced[w] = true;
  }
  detail::Sizes out_sizes;
  detail::Sizes with_ones = s.sizes;
  for (std::size_t i = 0; i < s.sizes.size(); ++i) {
    if (reduced[i]) with_ones[i] = 1;
    if (!reduced[i]) {
      out_sizes.push_back(s.sizes[i]);
    } else if (keepdim) {
      out_sizes.push_back(1);
    }
  }
  Tensor out = detail::reduction(s.numel, type, s.device, out_sizes, aten);
  if (autograd::any_requires_grad({&x})) {
    detail::Sizes in = s.sizes;
    autograd::record(mean ? "MeanBackward1" : "SumBackward1", {&x}, {&out}, {},
                     [in, with_ones, mean](Grads& g, Grads&, const autograd::Node&) {
                       Tensor back = g[0].reshape(with_ones).expand(in);
                       return Grads{mean ? back / 1.0 : back};
                     });
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim) {
  RecordOpScope scope;
  detail::check_defined(x, "sum", "self");
  detail::check_real(x, "sum", "self");
  const ScalarType type = autocast::fp32_output_dtype(x, std::nullopt).value_or(detail::sum_dtype(x.dtype()));
  Tensor out = reduce_dims(x, dims, keepdim, type, "sum", "aten::sum", false);
  if (scope.recording()) {
    if (type != x.dtype()) {  // autocast's fp32 sum
      record_op("aten.sum.dim_IntList",
                {RecordedArg::of(x), RecordedArg::of(dims), RecordedArg::of_bool(keepdim),
                 RecordedArg::of(type).keyword("dtype")},
                {out});
    } else {
      record_op("aten.sum.dim_IntList", {RecordedArg::of(x), RecordedArg::of(dims), RecordedArg::of_bool(keepdim)},
                {out});
    }
  }
  return out;
}

Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim) {
  RecordOpScope scope;
  detail::check_defined(x, "mean", "self");
  detail::check_real(x, "mean", "self");
  if (!x.is_floating_point()) {
    detail::fail("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                 "Got: {}",
                 scalar_type_name(x.dtype()));
  }
  Tensor out = reduce_dims(x, dims, keepdim, x.dtype(), "mean", "aten::mean", true);
  if (scope.recording()) {
    record_op("aten.mean.dim", {RecordedArg::of(x), RecordedArg::of(dims), RecordedArg::of_bool(keepdim)}, {out});
  }
  return out;
}

Tensor mean(const Tensor& x) {
  RecordOpScope scope;
  detail::check_defined(x, "mean", "self");
  detail::check_real(x, "mean", "self");
  if (!x.is_floating_point()) {
    detail::fail("mean: could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                 "Got: {}",
                 scalar_type_name(x.dtype()));
  }
  Tensor out = detail::reduction(x.numel(), x.dtype(), x.device(), {}, "aten::mean");
  if (autograd::any_requires_grad({&x})) {
    detail::Sizes in = x.sizes();
    // The gradient broadcast back and divided by the count: one kernel over the input's size.
    autograd::record("MeanBackward0", {&x}, {&out}, {}, [in](Grads& g, Grads&, const autograd::Node&) {
      return Grads{g[0].expand(in) / 1.0};
    });
  }
  if (scope.recording()) record_op("aten.mean.default", {RecordedArg::of(x)}, {out});
  return out;
}

namespace nn::functional {

Tensor nll_loss(const Tensor& log_probs_arg, const Tensor& target) {
  Tensor cast;  // on autocast's fp32 list
  const Tensor& log_probs = log_probs_arg.defined() ? detail::autocast_fp32(log_probs_arg, cast) : log_probs_arg;
  detail::check_defined(log_probs, "nll_loss", "input");
  detail::check_defined(target, "nll_loss", "target");
  const auto& x = impl_of(log_probs);
  const auto& t = impl_of(target);
  if (x.sizes.size() != 2) detail::fail("nll_loss: expected input of 2 dims [N, C], got {}", format_sizes(x.sizes));
  if (t.dtype != ScalarType::Long && t.dtype != ScalarType::Int) {
    detail::fail("nll_loss: expected target of class indices (Long), got {}", scalar_type_name(t.dtype));
  }
  if (t.sizes.size() != 1 || t.sizes[0] != x.sizes[0]) {
    detail::fail("nll_loss: Expected input batch_size ({}) to match target batch_size ({}).", x.sizes[0],
                 t.sizes.empty() ? 1 : t.sizes[0]);
  }
  // One log-probability gathered per row, then averaged.
  Tensor out = detail::reduction(x.sizes[0], x.dtype, x.device, {}, "aten::nll_loss_forward");
  if (autograd::any_requires_grad({&log_probs})) {
    detail::Sizes in = x.sizes;
    autograd::record("NllLossBackward0", {&log_probs}, {&out}, {target},
                   [in](Grads& g, Grads&, const autograd::Node&) {
                     return Grads{detail::nll_loss_backward(g[0], in)};
                   });
  }
  return out;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target) {
  detail::check_defined(input, "cross_entropy", "input");
  RecordOpScope scope;
  Tensor out = nll_loss(torch::log_softmax(input, -1), target);
  if (scope.recording()) record_op("aten.cross_entropy_loss.default", {RecordedArg::of(input), RecordedArg::of(target)}, {out});
  return out;
}

}  // namespace nn::functional

}  // namespace syntorch::torch
