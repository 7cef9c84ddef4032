// Complex numbers as rotary tables in torch.polar's form use them (LLaMA's reference code):
// polar builds the table, view_as_complex pairs the last dim of q and k, a mul rotates them and
// view_as_real unpairs the result. The views change the element type over the same memory.

#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch {

using detail::fail;
using detail::Grads;
using detail::impl_of;
using detail::Sizes;
using runtime::OpKind;

Tensor polar(const Tensor& abs, const Tensor& angle) {
  detail::check_defined(abs, "polar", "abs");
  detail::check_defined(angle, "polar", "angle");
  if (abs.dtype() != angle.dtype() || (abs.dtype() != kFloat && abs.dtype() != kDouble)) {
    fail("polar: expected abs and angle of the same type, Float or Double, got {} and {}",
         scalar_type_name(abs.dtype()), scalar_type_name(angle.dtype()));
  }
  detail::check_same_device(abs, angle, "polar");
  detail::no_backward({&abs, &angle}, "polar");
  const Sizes sizes = broadcast_shapes(abs.sizes(), angle.sizes());
  const ScalarType type = to_complex(abs.dtype());
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, sizes, type, abs.device(), "aten::polar");
  const std::int64_t n = impl_of(out).numel;
  detail::dispatch(ctx, detail::elementwise_op(OpKind::polar, n, type), "aten::polar", abs.device(), n == 0);
  return out;
}

Tensor view_as_complex(const Tensor& x) {
  detail::check_defined(x, "view_as_complex", "self");
  const auto& s = impl_of(x);
  if (s.dtype != kFloat && s.dtype != kDouble) {
    fail("view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {}",
         scalar_type_name(s.dtype));
  }
  if (s.sizes.empty() || s.sizes.back() != 2) fail("Tensor must have a last dimension of size 2");
  if (s.strides.back() != 1) fail("Tensor must have a last dimension with stride 1");
  for (std::size_t d = 0; d + 1 < s.strides.size(); ++d) {
    if (s.strides[d] % 2 != 0) fail("Tensor must have a stride divisible by 2 for all but last dimension");
  }
  if (s.offset % 2 != 0) fail("Tensor must have a storage_offset divisible by 2");
  detail::TensorImpl* view = detail::begin_view(x);
  view->dtype = to_complex(s.dtype);
  view->sizes.pop_back();
  view->strides.pop_back();
  for (std::int64_t& stride : view->strides) stride /= 2;
  view->offset = s.offset / 2;
  Tensor out = detail::finish_view(view);
  detail::host_op("aten::view_as_complex");
  if (autograd::any_requires_grad({&x})) {
    autograd::record("ViewAsComplexBackward0", {&x}, {&out}, {},
                     [](Grads& g, Grads&, const autograd::Node&) { return Grads{view_as_real(g[0])}; });
  }
  return out;
}

Tensor view_as_real(const Tensor& x) {
  detail::check_defined(x, "view_as_real", "self");
  const auto& s = impl_of(x);
  if (!is_complex(s.dtype)) {
    fail("view_as_real is only supported for complex tensors, but got a tensor of scalar type: {}",
         scalar_type_name(s.dtype));
  }
  detail::TensorImpl* view = detail::begin_view(x);
  view->dtype = to_real(s.dtype);
  for (std::int64_t& stride : view->strides) stride *= 2;
  view->sizes.push_back(2);
  view->strides.push_back(1);
  view->offset = s.offset * 2;
  Tensor out = detail::finish_view(view);
  detail::host_op("aten::view_as_real");
  if (autograd::any_requires_grad({&x})) {
    autograd::record("ViewAsRealBackward0", {&x}, {&out}, {},
                     [](Grads& g, Grads&, const autograd::Node&) { return Grads{view_as_complex(g[0].contiguous())}; });
  }
  return out;
}

}  // namespace syntorch::torch
