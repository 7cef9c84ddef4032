#pragma once
// Helpers shared by the torch layer's sources: making tensors and views, dispatching an op to the
// current rank, dimension wrapping, and error formatting (only on the error path).

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/autocast.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::detail {

using Sizes = std::vector<std::int64_t>;

// A tensor's gradient state: whether it requires a gradient, the node that made it (none for a
// leaf), the accumulator that feeds a leaf's .grad, and that .grad.
struct AutogradMeta {
  bool requires_grad = false;
  std::uint32_t output_nr = 0;
  std::shared_ptr<autograd::Node> grad_fn;
  std::weak_ptr<autograd::Node> grad_accumulator;
  Tensor grad;
  std::vector<std::function<void(Tensor&)>> post_accumulate_grad_hooks;
};
AutogradMeta& autograd_meta(TensorImpl& impl);  // made on first use
inline const AutogradMeta* autograd_meta_if(const Tensor& t) { return t.defined() ? t.unsafe_get_impl()->autograd : nullptr; }
void destroy_autograd_meta(TensorImpl& impl) noexcept;

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// "4x8x16", as libtorch prints matrix shapes in matmul messages.
std::string format_matrix(IntArrayRef sizes);

inline const TensorImpl& impl_of(const Tensor& t) { return *t.unsafe_get_impl(); }

// Throws "<op>: expected a defined tensor" for undefined arguments.
void check_defined(const Tensor& t, const char* op, const char* arg);
// Throws for a complex tensor: complex numbers are modelled in elementwise ops, copies and views
// (rotary tables), not in matrix products, row-wise kernels, attention or reductions.
void check_real(const Tensor& t, const char* op, const char* arg);
// Throws unless a and b have the same dtype and device.
void check_same(const Tensor& a, const Tensor& b, const char* op);
// Throws unless a and b are on the same kind of device.
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
// The dtype of a binary pointwise op's result (ATen's result_type): a zero-dim operand defers to a
// dimensioned one of its category (floating or integral), otherwise promote_types; throws naming
// `op` where PyTorch refuses to promote.
ScalarType result_type(const Tensor& a, const Tensor& b, const char* op);

// An autocast op's argument (autocast.hpp): `t` itself when autocast leaves it, else the cast,
// kept in `holder`.
inline const Tensor& autocast_lower(const Tensor& t, Tensor& holder) {
  if (!autocast::is_autocast_enabled()) return t;
  holder = autocast::lower_precision(t);
  return holder;
}
inline const Tensor& autocast_fp32(const Tensor& t, Tensor& holder) {
  if (!autocast::is_autocast_enabled()) return t;
  holder = autocast::full_precision(t);
  return holder;
}

// A dim in [-ndim, ndim) as a dim in [0, ndim). 0-dim tensors take dims 0 and -1.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);

std::int64_t product(IntArrayRef sizes);
Sizes contiguous_strides(IntArrayRef sizes);
bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides);

// Tensor state comes from a per-thread pool, so that an op's output (and a view) usually costs no
// heap allocation: released impls keep their size and stride vectors' capacity for the next one.
TensorImpl* new_impl();
void recycle(TensorImpl* impl) noexcept;

// A new contiguous tensor owning fresh memory: allocated from `context` (under the thread's current
// memory use, named `what`) when a context is given, the device is CUDA and the size is not zero.
Tensor make_tensor(runtime::RankContext* context, IntArrayRef sizes, ScalarType dtype, Device device,
                   std::string_view what);
// A view of src's memory with this layout (no host op: callers record one).
Tensor make_view(const Tensor& src, IntArrayRef sizes, IntArrayRef strides, std::int64_t offset);
// The same in two steps: begin_view copies src's layout into a new view (sharing src's memory) for
// the caller to edit; finish_view computes its element count and contiguity. Nothing may throw
// between the two.
TensorImpl* begin_view(const Tensor& src);
Tensor finish_view(TensorImpl* view);

// A per-thread vector for building sizes without allocating (slot 0 or 1; cleared).
Sizes& scratch(int slot);

// The dtype a sum or product of `t` elements has, as PyTorch's: floating and complex types keep
// theirs, integer and bool types give int64.
inline ScalarType sum_dtype(ScalarType t) {
  return is_floating_point(t) || is_complex(t) ? t : ScalarType::Long;
}

// Runs an op on the tensors' device: a kernel launch on CUDA, a host-side op on CPU; nothing
// outside a simulation. An op with no elements costs dispatch only (no kernel).
inline void dispatch(runtime::RankContext* context, const runtime::OpDesc& op, std::string_view name, Device device,
                     bool empty) {
  if (!context) return;
  if (!device.is_cuda() || empty) {  // host and meta tensors: the framework's dispatch, no kernel
    context->host_op(name);
    // A copy in host memory (a concatenation or stack of host tensors, as a DataLoader's collate
    // makes; a clone) costs the host its bytes at its memcpy rate.
    if (device.is_cpu() && !empty && op.kind == runtime::OpKind::copy) {
      context->stage_host_copy(op.elements * dtype_bits(op.dtype) / 8, name);
    }
  } else {
    context->launch(op, name);
  }
}
inline void host_op(std::string_view name) {
  if (runtime::RankContext* c = runtime::current_rank()) c->host_op(name);
}

// The backend switches (SdpBackend bits) as an attention OpDesc carries them: 0 when all are on.
static_assert(static_cast<std::uint8_t>(SdpBackend::flash) == runtime::OpDesc::kSdpFlash &&
              static_cast<std::uint8_t>(SdpBackend::mem_efficient) == runtime::OpDesc::kSdpMemEfficient &&
              static_cast<std::uint8_t>(SdpBackend::math) == runtime::OpDesc::kSdpMath &&
              static_cast<std::uint8_t>(SdpBackend::cudnn) == runtime::OpDesc::kSdpCudnn);
inline std::uint8_t sdp_backends_of(std::uint8_t enabled) {
  return enabled == kAllSdpBackends ? 0 : static_cast<std::uint8_t>(enabled | runtime::OpDesc::kSdpRestricted);
}

inline runtime::OpDesc elementwise_op(runtime::OpKind kind, std::int64_t elements, ScalarType dtype) {
  runtime::OpDesc op;
  op.kind = kind;
  op.dtype = to_runtime_dtype(dtype);
  // A ComplexDouble element is two fp64 ones.
  op.elements = static_cast<std::uint64_t>(elements) * (dtype == ScalarType::ComplexDouble ? 2 : 1);
  return op;
}

// Whether `from` broadcasts to exactly `to` (right-aligned dims equal or 1, no more dims than `to`).
bool broadcasts_to(IntArrayRef from, IntArrayRef to);

// Sizes with -1 resolved against numel, into `out` (throws with libtorch's message naming `op`).
void infer_size(IntArrayRef shape, std::int64_t numel, const char* op, Sizes& out);
// The strides a view of (sizes, strides) as new_sizes must have, or false when no view can express
// it (ATen's computeStride).
bool view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes, Sizes& out);

// One value or one per dim (PyTorch's _pair/_triple): `dims` values, each at least `floor`;
// "<op>: <what> must have 1 or N values" otherwise.
Sizes per_dim(IntArrayRef values, std::size_t dims, const char* op, const char* what, std::int64_t floor);

// Parameter creation for modules: an empty tensor allocated under MemoryUse::weights.
Tensor make_parameter(IntArrayRef sizes, ScalarType dtype, std::string_view what);

}  // namespace syntorch::torch::detail
