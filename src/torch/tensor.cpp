// Tensor handles, their memory, and the view ops (host-side only, memory shared).

#include "syntorch/torch/tensor.hpp"

#include <algorithm>
#include <mutex>

#include "backward_ops.hpp"
#include "grad.hpp"
#include "internal.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch {

namespace detail {

namespace {

// Released impls waiting for reuse on this thread (per thread: impls are released on their rank
// program's thread, so the pool needs no lock). The state (trivially destructible, so still
// readable during thread exit) keeps tensors released after the pool is destroyed away from it.
constexpr std::size_t kPoolCapacity = 4096;
enum class PoolState : std::uint8_t { unused, alive, destroyed };
thread_local PoolState t_pool_state = PoolState::unused;  // per thread, as the pool
struct ImplPool {
  std::vector<TensorImpl*> free;
  ImplPool() {
    free.reserve(kPoolCapacity);
    t_pool_state = PoolState::alive;
  }
  ~ImplPool() {
    t_pool_state = PoolState::destroyed;
    for (TensorImpl* impl : free) delete impl;
  }
  ImplPool(const ImplPool&) = delete;
  ImplPool& operator=(const ImplPool&) = delete;
};
thread_local ImplPool t_pool;  // constructed on first use

}  // namespace

TensorImpl* new_impl() {
  static std::atomic<std::uint64_t> serials{0};
  const std::uint64_t serial = serials.fetch_add(1, std::memory_order_relaxed) + 1;
  if (t_pool_state != PoolState::destroyed && !t_pool.free.empty()) {
    TensorImpl* impl = t_pool.free.back();
    t_pool.free.pop_back();
    impl->refs.store(1, std::memory_order_relaxed);
    impl->serial = serial;
    return impl;
  }
  auto* impl = new TensorImpl;
  impl->serial = serial;
  return impl;
}

// Serials of watched tensors released and not yet taken (take_released_watched).
struct ReleasedWatched {
  std::mutex mutex;
  std::vector<std::uint64_t> serials;
};
ReleasedWatched& released_watched() {
  static ReleasedWatched* list = new ReleasedWatched;  // never destroyed: tensors outlive statics
  return *list;
}

void recycle(TensorImpl* impl) noexcept {
  if (impl->watched) {
    impl->watched = false;
    ReleasedWatched& list = released_watched();
    try {
      const std::lock_guard lock(list.mutex);
      list.serials.push_back(impl->serial);
    } catch (...) {  // out of memory: the entry is lost, and its data kept until the process ends
    }
  }
  if (impl->autograd) destroy_autograd_meta(*impl);
  if (t_pool_state == PoolState::destroyed || t_pool.free.size() >= kPoolCapacity) {
    delete impl;
    return;
  }
  impl->base = nullptr;
  impl->context = nullptr;
  impl->context_serial = 0;
  impl->handle = 0;
  impl->storage_bytes = 0;
  impl->offset = 0;
  impl->numel = 1;
  impl->contiguous = true;
  impl->pinned = false;
  impl->sizes.clear();
  impl->strides.clear();
  t_pool.free.push_back(impl);
}

void release(TensorImpl* impl) noexcept {
  if (!impl || impl->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (impl->base) {
    release(impl->base);
  } else if (runtime::RankContext* current = runtime::current_rank();
             impl->context && current && current->memory_owner() == impl->context &&
             impl->context->serial() == impl->context_serial) {
    // Only the rank's own program frees its memory: a tensor outliving the simulation (its
    // context no longer current) has nothing left to give back. The free goes through the current
    // context (a compiled region in front of the owner sees it).
    current->free(impl->handle);
  }
  recycle(impl);
}

Sizes& scratch(int slot) {
  thread_local Sizes buffers[2];  // per thread: rank programs run at once; used until the caller returns
  Sizes& b = buffers[slot];
  b.clear();
  return b;
}

std::string format_matrix(IntArrayRef sizes) {
  std::string out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += "x";
    out += std::to_string(sizes[i]);
  }
  return out;
}

void check_defined(const Tensor& t, const char* op, const char* arg) {
  if (!t.defined()) fail("{}: expected a defined tensor for argument '{}'", op, arg);
}

void check_real(const Tensor& t, const char* op, const char* arg) {
  if (t.defined() && is_complex(impl_of(t).dtype)) {
    fail("{}: argument '{}' is {}: complex tensors are supported by elementwise ops, copies and views only", op, arg,
         scalar_type_name(impl_of(t).dtype));
  }
}

void check_same(const Tensor& a, const Tensor& b, const char* op) {
  const TensorImpl& x = impl_of(a);
  const TensorImpl& y = impl_of(b);
  if (x.dtype != y.dtype) {
    fail("{}: expected both tensors to have the same dtype, but got: {} != {}", op, scalar_type_name(x.dtype),
         scalar_type_name(y.dtype));
  }
  check_same_device(a, b, op);
}

ScalarType result_type(const Tensor& a, const Tensor& b, const char* op) {
  const TensorImpl& x = impl_of(a);
  const TensorImpl& y = impl_of(b);
  if (x.dtype == y.dtype) return x.dtype;
  const std::optional<ScalarType> t = promote_types(x.dtype, y.dtype);
  // A zero-dim operand defers to a dimensioned one of its category or a higher one (bool <
  // integral < floating < complex); of a higher category it sets the category, and a complex one
  // meeting a dimensioned floating one gives that precision's complex type.
  auto category = [](ScalarType s) {
    return s == ScalarType::Bool ? 0 : is_complex(s) ? 3 : is_floating_point(s) ? 2 : 1;
  };
  const bool zero_x = x.sizes.empty(), zero_y = y.sizes.empty();
  if (t && zero_x != zero_y) {
    const TensorImpl& dimensioned = zero_x ? y : x;
    const TensorImpl& zero = zero_x ? x : y;
    if (category(zero.dtype) <= category(dimensioned.dtype)) return dimensioned.dtype;
    if (is_complex(zero.dtype) && is_floating_point(dimensioned.dtype)) return to_complex(dimensioned.dtype);
  }
  if (!t) {
    fail("{}: Promotion for Float8 Types is not supported, attempted to promote {} and {}", op,
         scalar_type_name(x.dtype), scalar_type_name(y.dtype));
  }
  return *t;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  const TensorImpl& x = impl_of(a);
  const TensorImpl& y = impl_of(b);
  if (x.device.type() != y.device.type()) {
    fail("{}: Expected all tensors to be on the same device, but found at least two devices, {} and {}!", op,
         x.device.str(), y.device.str());
  }
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t n = std::max<std::int64_t>(ndim, 1);
  if (dim < -n || dim >= n) {
    fail("{}: Dimension out of range (expected to be in range of [{}, {}], but got {})", op, -n, n - 1, dim);
  }
  return dim < 0 ? dim + n : dim;
}

std::int64_t product(IntArrayRef sizes) {
  std::int64_t p = 1;
  for (std::int64_t s : sizes) p *= s;
  return p;
}

Sizes contiguous_strides(IntArrayRef sizes) {
  Sizes strides(sizes.size());
  std::int64_t s = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<std::int64_t>(sizes[i], 1);
  }
  return strides;
}

bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

Tensor make_tensor(runtime::RankContext* context, IntArrayRef sizes, ScalarType dtype, Device device,
                   std::string_view what) {
  std::int64_t numel = 1;
  for (std::int64_t s : sizes) {
    if (s < 0) fail("{}: Trying to create tensor with negative dimension {}: {}", what, s, format_sizes(sizes));
    numel *= s;
  }
  const std::uint64_t bytes = (static_cast<std::uint64_t>(numel) * element_bits(dtype) + 7) / 8;
  const bool allocate = context && device.is_cuda() && bytes > 0;
  // Allocate first: an OutOfMemory leaves nothing behind.
  const std::uint32_t handle = allocate ? context->allocate(bytes, runtime::current_memory_use(), what) : 0;
  TensorImpl* impl = new_impl();
  impl->dtype = dtype;
  impl->device = device;
  impl->numel = numel;
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides.resize(sizes.size());
  std::int64_t stride = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    impl->strides[i] = stride;
    stride *= std::max<std::int64_t>(sizes[i], 1);
  }
  if (allocate) {
    impl->handle = handle;
    impl->context = context->memory_owner();
    impl->context_serial = impl->context->serial();
    impl->storage_bytes = bytes;
  }
  return Tensor(impl);
}

TensorImpl* begin_view(const Tensor& src) {
  const TensorImpl& s = impl_of(src);
  TensorImpl* impl = new_impl();
  impl->dtype = s.dtype;
  impl->device = s.device;
  impl->offset = s.offset;
  impl->sizes.assign(s.sizes.begin(), s.sizes.end());
  impl->strides.assign(s.strides.begin(), s.strides.end());
  impl->storage_bytes = s.storage_bytes;
  impl->base = s.base ? s.base : src.unsafe_get_impl();
  impl->pinned = s.pinned;  // a view of pinned memory is pinned
  retain(impl->base);
  return impl;
}

Tensor finish_view(TensorImpl* impl) {
  impl->numel = product(impl->sizes);
  impl->contiguous = compute_contiguous(impl->sizes, impl->strides);
  Tensor out(impl);
  if (recording_top_level()) {  // a view made by the program itself: as_strided of its memory's owner
    op_recorder()->begin_op();  // it launches nothing: what was launched before is not its work
    retain(impl->base);
    const Tensor base(impl->base);
    record_op("aten.as_strided.default",
              {RecordedArg::of(base), RecordedArg::of(IntArrayRef(impl->sizes)),
               RecordedArg::of(IntArrayRef(impl->strides)), RecordedArg::of(impl->offset)},
              {out});
  }
  return out;
}

Tensor make_view(const Tensor& src, IntArrayRef sizes, IntArrayRef strides, std::int64_t offset) {
  TensorImpl* impl = begin_view(src);
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides.assign(strides.begin(), strides.end());
  impl->offset = offset;
  return finish_view(impl);
}

Sizes per_dim(IntArrayRef values, std::size_t dims, const char* op, const char* what, std::int64_t floor) {
  if (values.size() != 1 && values.size() != dims) fail("{}: {} must have 1 or {} values, got {}", op, what, dims, values.size());
  Sizes out(dims);
  for (std::size_t i = 0; i < dims; ++i) {
    out[i] = values.size() == 1 ? values[0] : values[i];
    if (out[i] < floor) fail("{}: {} must be at least {}, got {}", op, what, floor, out[i]);
  }
  return out;
}

bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

void infer_size(IntArrayRef shape, std::int64_t numel, const char* op, Sizes& out) {
  out.assign(shape.begin(), shape.end());
  std::int64_t known = 1;
  std::int64_t infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("{}: only one dimension can be inferred", op);
      infer = static_cast<std::int64_t>(i);
    } else if (shape[i] < 0) {
      fail("{}: invalid shape dimension {}", op, shape[i]);
    } else {
      known *= shape[i];
    }
  }
  if (numel == known || (infer >= 0 && known > 0 && numel % known == 0)) {
    if (infer >= 0) out[static_cast<std::size_t>(infer)] = numel / known;
    return;
  }
  if (infer >= 0 && known == 0) {
    fail("{}: cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any "
         "value and is ambiguous",
         op, format_sizes(shape));
  }
  fail("{}: shape '{}' is invalid for input of size {}", op, format_sizes(shape), numel);
}

bool view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes, Sizes& out) {
  out.assign(new_sizes.size(), 0);
  if (compute_contiguous(sizes, strides) || product(sizes) == 0) {
    out = contiguous_strides(new_sizes);
    return true;
  }
  // ATen's computeStride: each run of dims that is contiguous within itself ("chunk") must map to
  // a run of new dims with the same element count.
  std::int64_t view_d = static_cast<std::int64_t>(new_sizes.size()) - 1;
  std::int64_t chunk_base_stride = strides.back();
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(sizes.size()) - 1; d >= 0; --d) {
    const auto ud = static_cast<std::size_t>(d);
    tensor_numel *= sizes[ud];
    if (d == 0 || (sizes[ud - 1] != 1 && strides[ud - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[static_cast<std::size_t>(view_d)] == 1)) {
        out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[ud - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

Tensor make_parameter(IntArrayRef sizes, ScalarType dtype, std::string_view what) {
  runtime::RankContext* ctx = runtime::current_rank();
  runtime::MemoryUseGuard weights(os::MemoryUse::weights);
  Tensor t = make_tensor(ctx, sizes, dtype, Device(DeviceType::CUDA), what);
  if (ctx) ctx->host_op("aten::empty");
  return t;
}

}  // namespace detail

using detail::fail;
using detail::impl_of;
using detail::Sizes;

void Tensor::watch_release() const {
  if (!impl_) throw Error("Tensor::watch_release: the tensor is undefined (default-constructed)");
  impl_->watched = true;
}

std::vector<std::uint64_t> take_released_watched() {
  detail::ReleasedWatched& list = detail::released_watched();
  const std::lock_guard lock(list.mutex);
  return std::exchange(list.serials, {});
}

const detail::TensorImpl& Tensor::checked() const {
  if (!impl_) throw Error("Tensor: the tensor is undefined (default-constructed)");
  return *impl_;
}

std::int64_t Tensor::size(std::int64_t dim) const {
  const auto& s = checked().sizes;
  return s[static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.size()), "size"))];
}

std::int64_t Tensor::stride(std::int64_t dim) const {
  const auto& s = checked().strides;
  if (s.empty()) return 1;
  return s[static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.size()), "stride"))];
}

std::size_t Tensor::nbytes() const {
  const auto& i = checked();
  return (static_cast<std::size_t>(i.numel) * element_bits(i.dtype) + 7) / 8;
}

bool Tensor::is_alias_of(const Tensor& other) const {
  if (!impl_ || !other.impl_) return false;
  const auto* a = impl_->base ? impl_->base : impl_;
  const auto* b = other.impl_->base ? other.impl_->base : other.impl_;
  return a == b;
}

// --- Views ---

namespace {

// How a view's gradient goes back to its input's layout: reshaped (view, reshape, flatten,
// unsqueeze, squeeze), transposed or permuted back (views of the gradient, no kernel), summed
// over expanded dims, or, for a slice of the input, written into a zeroed gradient of the whole
// input (zeros, then a copy: ATen's slice_backward).
struct ViewGrad {
  enum class Kind : std::uint8_t { reshape, transpose, permute, expand, slice, select };
  ViewGrad(Kind k = Kind::reshape, std::int64_t d0 = 0, std::int64_t d1 = 0, std::int64_t from = 0,
           std::int64_t to = 0, std::int64_t by = 1)
      : kind(k), dim(d0), dim1(d1), start(from), end(to), step(by) {}
  Kind kind;
  std::int64_t dim, dim1, start, end, step;
  Sizes dims;  // permute's order
};

void record_view(const Tensor& self, Tensor& out, const char* name, ViewGrad v) {
  if (!autograd::any_requires_grad({&self})) return;
  Sizes in = self.sizes();
  autograd::record(name, {&self}, {&out}, {}, [in, v](detail::Grads& g, detail::Grads&, const autograd::Node&) {
    using K = ViewGrad::Kind;
    switch (v.kind) {
      case K::reshape: return detail::Grads{g[0].reshape(in)};
      case K::transpose: return detail::Grads{g[0].transpose(v.dim, v.dim1)};
      case K::permute: {
        Sizes inverse(v.dims.size());
        for (std::size_t i = 0; i < v.dims.size(); ++i) inverse[static_cast<std::size_t>(v.dims[i])] = static_cast<std::int64_t>(i);
        return detail::Grads{g[0].permute(inverse)};
      }
      case K::expand: return detail::Grads{detail::sum_to(g[0], in)};
      case K::slice: {
        Tensor z = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
        z.slice(v.dim, v.start, v.end, v.step).copy_(g[0]);
        return detail::Grads{z};
      }
      case K::select: {
        Tensor z = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
        z.select(v.dim, v.start).copy_(g[0]);
        return detail::Grads{z};
      }
    }
    return detail::Grads{Tensor()};
  });
}

}  // namespace

Tensor Tensor::view(IntArrayRef sizes) const {
  const auto& s = checked();
  Sizes& shape = detail::scratch(0);
  Sizes& strides = detail::scratch(1);
  detail::infer_size(sizes, s.numel, "view", shape);
  if (!detail::view_strides(s.sizes, s.strides, shape, strides)) {
    fail("view: view size is not compatible with input tensor's size and stride (at least one dimension spans across "
         "two contiguous subspaces). Use .reshape(...) instead. (input {} with strides {}, view {})",
         format_sizes(s.sizes), format_sizes(s.strides), format_sizes(shape));
  }
  Tensor out = detail::make_view(*this, shape, strides, s.offset);
  detail::host_op("aten::view");
  record_view(*this, out, "ViewBackward0", {});
  return out;
}

namespace {

Tensor reshape_as(const Tensor& self, IntArrayRef sizes, const char* op, std::string_view aten) {
  const auto& s = impl_of(self);
  Sizes& shape = detail::scratch(0);
  Sizes& strides = detail::scratch(1);
  detail::infer_size(sizes, s.numel, op, shape);
  if (detail::view_strides(s.sizes, s.strides, shape, strides)) {
    Tensor out = detail::make_view(self, shape, strides, s.offset);
    detail::host_op(aten);
    record_view(self, out, "ViewBackward0", {});
    return out;
  }
  // No view can express it: a contiguous copy.
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, shape, s.dtype, s.device, aten);
  detail::dispatch(ctx, detail::elementwise_op(runtime::OpKind::copy, s.numel, s.dtype), aten, s.device, s.numel == 0);
  record_view(self, out, "UnsafeViewBackward0", {});
  return out;
}

}  // namespace

Tensor Tensor::reshape(IntArrayRef sizes) const {
  checked();
  RecordOpScope scope;
  Tensor out = reshape_as(*this, sizes, "reshape", "aten::reshape");
  if (scope.recording()) record_op("aten.reshape.default", {RecordedArg::of(*this), RecordedArg::of(sizes)}, {out});
  return out;
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  const auto& s = checked();
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  if (n == 0) return reshape_as(*this, {1}, "flatten", "aten::flatten");
  const std::int64_t a = detail::wrap_dim(start_dim, n, "flatten");
  const std::int64_t b = detail::wrap_dim(end_dim, n, "flatten");
  if (a > b) fail("flatten: flatten() has invalid args: start_dim ({}) cannot come after end_dim ({})", a, b);
  Sizes shape(s.sizes.begin(), s.sizes.begin() + a);
  std::int64_t merged = 1;
  for (std::int64_t d = a; d <= b; ++d) merged *= s.sizes[static_cast<std::size_t>(d)];
  shape.push_back(merged);
  shape.insert(shape.end(), s.sizes.begin() + b + 1, s.sizes.end());
  return reshape_as(*this, shape, "flatten", "aten::flatten");
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  const auto& s = checked();
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  const auto a = static_cast<std::size_t>(detail::wrap_dim(dim0, n, "transpose"));
  const auto b = static_cast<std::size_t>(detail::wrap_dim(dim1, n, "transpose"));
  detail::TensorImpl* v = detail::begin_view(*this);
  if (n > 0) {
    std::swap(v->sizes[a], v->sizes[b]);
    std::swap(v->strides[a], v->strides[b]);
  }
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::transpose");
  record_view(*this, out, "TransposeBackward0", {ViewGrad::Kind::transpose, static_cast<std::int64_t>(a),
                                                 static_cast<std::int64_t>(b)});
  return out;
}

Tensor Tensor::t() const {
  const auto& s = checked();
  if (s.sizes.size() > 2) fail("t: t() expects a tensor with <= 2 dimensions, but self is {}D", s.sizes.size());
  if (s.sizes.size() < 2) {
    Tensor out = detail::finish_view(detail::begin_view(*this));
    detail::host_op("aten::t");
    record_view(*this, out, "TBackward0", {});
    return out;
  }
  return transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  const auto& s = checked();
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  if (static_cast<std::int64_t>(dims.size()) != n) {
    fail("permute: number of dimensions in the tensor input does not match the length of the desired ordering of "
         "dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
         n, dims.size());
  }
  Sizes& order = detail::scratch(0);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t d = detail::wrap_dim(dims[i], n, "permute");
    if (std::find(order.begin(), order.end(), d) != order.end()) {
      fail("permute: duplicate dims are not allowed (dims {})", format_sizes(dims));
    }
    order.push_back(d);
  }
  detail::TensorImpl* v = detail::begin_view(*this);
  for (std::size_t i = 0; i < order.size(); ++i) {
    v->sizes[i] = s.sizes[static_cast<std::size_t>(order[i])];
    v->strides[i] = s.strides[static_cast<std::size_t>(order[i])];
  }
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::permute");
  ViewGrad grad{ViewGrad::Kind::permute};
  grad.dims.assign(order.begin(), order.end());
  record_view(*this, out, "PermuteBackward0", std::move(grad));
  return out;
}

Tensor Tensor::unsqueeze(std::int64_t dim) const {
  const auto& s = checked();
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  const auto d = static_cast<std::ptrdiff_t>(detail::wrap_dim(dim, n + 1, "unsqueeze"));
  const auto ud = static_cast<std::size_t>(d);
  const std::int64_t stride = ud >= s.sizes.size() ? 1 : s.sizes[ud] * s.strides[ud];
  detail::TensorImpl* v = detail::begin_view(*this);
  v->sizes.insert(v->sizes.begin() + d, 1);
  v->strides.insert(v->strides.begin() + d, stride);
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::unsqueeze");
  record_view(*this, out, "UnsqueezeBackward0", {});
  return out;
}

Tensor Tensor::squeeze() const {
  const auto& s = checked();
  detail::TensorImpl* v = detail::begin_view(*this);
  v->sizes.clear();
  v->strides.clear();
  for (std::size_t i = 0; i < s.sizes.size(); ++i) {
    if (s.sizes[i] != 1) {
      v->sizes.push_back(s.sizes[i]);
      v->strides.push_back(s.strides[i]);
    }
  }
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::squeeze");
  record_view(*this, out, "SqueezeBackward0", {});
  return out;
}

Tensor Tensor::squeeze(std::int64_t dim) const {
  const auto& s = checked();
  const auto n = static_cast<std::int64_t>(s.sizes.size());
  const auto d = static_cast<std::ptrdiff_t>(detail::wrap_dim(dim, n, "squeeze"));
  detail::TensorImpl* v = detail::begin_view(*this);
  if (n > 0 && s.sizes[static_cast<std::size_t>(d)] == 1) {
    v->sizes.erase(v->sizes.begin() + d);
    v->strides.erase(v->strides.begin() + d);
  }
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::squeeze");
  record_view(*this, out, "SqueezeBackward0", {});
  return out;
}

namespace {

// The view of [start, end) by step along dim, without recording a host op.
Tensor slice_view(const Tensor& self, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step,
                  const char* op) {
  const auto& s = impl_of(self);
  if (s.sizes.empty()) fail("{}: slice() cannot be applied to a 0-dim tensor.", op);
  if (step <= 0) fail("{}: slice step must be positive, got {}", op, step);
  const auto d = static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), op));
  const std::int64_t size = s.sizes[d];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  detail::TensorImpl* v = detail::begin_view(self);
  v->sizes[d] = (end - start + step - 1) / step;
  v->strides[d] = s.strides[d] * step;
  v->offset = s.offset + start * s.strides[d];
  return detail::finish_view(v);
}

}  // namespace

Tensor Tensor::slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) const {
  checked();
  Tensor out = slice_view(*this, dim, start, end, step, "slice");
  detail::host_op("aten::slice");
  record_view(*this, out, "SliceBackward0", {ViewGrad::Kind::slice, dim, 0, start, end, step});
  return out;
}

Tensor Tensor::narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const {
  const auto& s = checked();
  if (s.sizes.empty()) fail("narrow: narrow() cannot be applied to a 0-dim tensor.");
  const auto d = static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "narrow"));
  const std::int64_t size = s.sizes[d];
  if (start < -size || start > size) {
    fail("narrow: start out of range (expected to be in range of [{}, {}], but got {})", -size, size, start);
  }
  if (start < 0) start += size;
  if (length < 0 || start + length > size) {
    fail("narrow: start ({}) + length ({}) exceeds dimension size ({}).", start, length, size);
  }
  Tensor out = slice_view(*this, static_cast<std::int64_t>(d), start, start + length, 1, "narrow");
  detail::host_op("aten::narrow");
  record_view(*this, out, "SliceBackward0",
              {ViewGrad::Kind::slice, static_cast<std::int64_t>(d), 0, start, start + length, 1});
  return out;
}

Tensor Tensor::select(std::int64_t dim, std::int64_t index) const {
  const auto& s = checked();
  if (s.sizes.empty()) fail("select: select() cannot be applied to a 0-dim tensor.");
  const auto d = static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "select"));
  const std::int64_t size = s.sizes[d];
  if (index < -size || index >= size) {
    fail("select: select(): index {} out of range for tensor of size {} at dimension {}", index,
         format_sizes(s.sizes), d);
  }
  if (index < 0) index += size;
  detail::TensorImpl* v = detail::begin_view(*this);
  v->sizes.erase(v->sizes.begin() + static_cast<std::ptrdiff_t>(d));
  v->strides.erase(v->strides.begin() + static_cast<std::ptrdiff_t>(d));
  v->offset = s.offset + index * s.strides[d];
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::select");
  record_view(*this, out, "SelectBackward0", {ViewGrad::Kind::select, static_cast<std::int64_t>(d), 0, index});
  return out;
}

Tensor Tensor::expand(IntArrayRef target) const {
  const auto& s = checked();
  const std::size_t n = s.sizes.size();
  if (target.size() < n) {
    fail("expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the "
         "tensor ({})",
         target.size(), n);
  }
  const std::size_t lead = target.size() - n;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      if (target[i] < 0) {
        fail("expand: The expanded size of the tensor ({}) isn't allowed in a leading, non-existing dimension {}",
             target[i], i);
      }
      continue;
    }
    const std::int64_t want = target[i] == -1 ? s.sizes[i - lead] : target[i];
    if (want != s.sizes[i - lead] && (s.sizes[i - lead] != 1 || want < 0)) {
      fail("expand: The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
           "dimension {}.  Target sizes: {}.  Tensor sizes: {}",
           want, s.sizes[i - lead], i, format_sizes(target), format_sizes(s.sizes));
    }
  }
  detail::TensorImpl* v = detail::begin_view(*this);
  v->sizes.resize(target.size());
  v->strides.resize(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      v->sizes[i] = target[i];
      v->strides[i] = 0;
      continue;
    }
    const std::size_t j = i - lead;
    const std::int64_t want = target[i] == -1 ? s.sizes[j] : target[i];
    v->sizes[i] = want;
    v->strides[i] = want == s.sizes[j] ? s.strides[j] : 0;
  }
  Tensor out = detail::finish_view(v);
  detail::host_op("aten::expand");
  record_view(*this, out, "ExpandBackward0", {ViewGrad::Kind::expand});
  return out;
}

namespace {

// Pieces of `self` along dim d of the given sizes (views), one host op, and one backward node for
// all of them: their gradients (zeros for a piece that got none) concatenated.
std::vector<Tensor> split_pieces(const Tensor& self, const Sizes& sizes, std::int64_t d, std::string_view aten) {
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  std::int64_t start = 0;
  for (std::int64_t n : sizes) {
    out.push_back(slice_view(self, d, start, start + n, 1, "split"));
    start += n;
  }
  detail::host_op(aten);
  if (autograd::any_requires_grad({&self})) {
    std::vector<Tensor*> outs;
    std::vector<Sizes> shapes;
    for (Tensor& t : out) {
      outs.push_back(&t);
      shapes.push_back(t.sizes());
    }
    autograd::record("SplitBackward0", {&self}, outs, {},
                     [d, shapes](detail::Grads& g, detail::Grads&, const autograd::Node&) {
                       std::vector<Tensor> parts;
                       TensorOptions options;
                       for (const Tensor& piece : g) {
                         if (piece.defined()) options = TensorOptions(piece.dtype()).device(piece.device());
                       }
                       for (std::size_t i = 0; i < g.size(); ++i) {
                         parts.push_back(g[i].defined() ? g[i] : zeros(shapes[i], options));
                       }
                       return detail::Grads{cat(parts, d)};
                     });
  }
  return out;
}

}  // namespace

std::vector<Tensor> Tensor::split(std::int64_t split_size, std::int64_t dim) const {
  const auto& s = checked();
  if (s.sizes.empty()) fail("split: split expects at least a 1-dimensional tensor");
  const auto d = detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "split");
  const std::int64_t size = s.sizes[static_cast<std::size_t>(d)];
  if (split_size < 0 || (split_size == 0 && size != 0)) {
    fail("split: split_size can only be 0 if dimension size is 0, but got dimension size of {} (split_size {})",
         size, split_size);
  }
  Sizes sizes;
  if (split_size == 0) {
    sizes.push_back(0);
  } else {
    for (std::int64_t start = 0; start < std::max<std::int64_t>(size, 1); start += split_size) {
      sizes.push_back(std::min(size, start + split_size) - std::min(size, start));
    }
  }
  return split_pieces(*this, sizes, d, "aten::split");
}

std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, std::int64_t dim) const {
  const auto& s = checked();
  if (s.sizes.empty()) fail("split_with_sizes: expects at least a 1-dimensional tensor");
  const auto d = detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "split_with_sizes");
  std::int64_t total = 0;
  for (std::int64_t n : split_sizes) {
    if (n < 0) fail("split_with_sizes: split_sizes must be non-negative, got {}", format_sizes(split_sizes));
    total += n;
  }
  if (total != s.sizes[static_cast<std::size_t>(d)]) {
    fail("split_with_sizes: expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got "
         "split_sizes={}",
         s.sizes[static_cast<std::size_t>(d)], d, format_sizes(split_sizes));
  }
  return split_pieces(*this, Sizes(split_sizes.begin(), split_sizes.end()), d, "aten::split_with_sizes");
}

std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t dim) const {
  const auto& s = checked();
  if (s.sizes.empty()) fail("chunk: chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0) fail("chunk: chunk expects `chunks` to be greater than 0, got: {}", chunks);
  const std::int64_t size = s.sizes[static_cast<std::size_t>(detail::wrap_dim(dim, static_cast<std::int64_t>(s.sizes.size()), "chunk"))];
  const std::int64_t split_size = (size + chunks - 1) / chunks;
  return split(split_size == 0 && size != 0 ? 1 : split_size, dim);
}

// --- Copies ---

namespace {
// A copy kernel into a new tensor like `src` (clone; contiguous of a strided one), its gradient
// passed straight through.
Tensor copied(const Tensor& src, const detail::TensorImpl& s, std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, aten);
  detail::dispatch(ctx, detail::elementwise_op(runtime::OpKind::copy, s.numel, s.dtype), aten, s.device, s.numel == 0);
  if (autograd::any_requires_grad({&src})) {
    autograd::record("CloneBackward0", {&src}, {&out}, {},
                     [](detail::Grads& g, detail::Grads&, const autograd::Node&) { return detail::Grads{g[0]}; });
  }
  return out;
}
}  // namespace

Tensor Tensor::contiguous() const {
  const auto& s = checked();
  if (s.contiguous) return *this;
  RecordOpScope scope;
  Tensor out = copied(*this, s, "aten::contiguous");
  if (scope.recording()) {
    record_op("aten.clone.default", {RecordedArg::of(*this), RecordedArg::of_text("contiguous_format").keyword("memory_format")},
              {out});
  }
  return out;
}

Tensor Tensor::clone() const {
  RecordOpScope scope;
  Tensor out = copied(*this, checked(), "aten::clone");
  if (scope.recording()) record_op("aten.clone.default", {RecordedArg::of(*this)}, {out});
  return out;
}

Tensor Tensor::to(ScalarType dtype) const {
  const auto& s = checked();
  if (s.dtype == dtype) return *this;
  RecordOpScope scope;
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, dtype, s.device, "aten::to");
  detail::dispatch(ctx, detail::elementwise_op(runtime::OpKind::copy, s.numel, dtype), "aten::to", s.device,
                   s.numel == 0);
  if (scope.recording()) {
    record_op("aten._to_copy.default", {RecordedArg::of(*this), RecordedArg::of(dtype).keyword("dtype")}, {out});
  }
  if (autograd::any_requires_grad({this})) {
    const ScalarType from = s.dtype;
    autograd::record("ToCopyBackward0", {this}, {&out}, {},
                   [from](detail::Grads& g, detail::Grads&, const autograd::Node&) { return detail::Grads{g[0].to(from)}; });
  }
  return out;
}

namespace {
// A copy between host and device memory as PyTorch's copy_ makes it (Tensor::to's comment).
void host_device_copy(runtime::RankContext* ctx, std::uint64_t bytes, bool to_device, bool host_pinned,
                      bool non_blocking, std::string_view name) {
  if (to_device) {
    if (!host_pinned) ctx->stage_host_copy(bytes, "pageable staging");
    ctx->copy_host_to_device(bytes, name);
    if (!non_blocking) ctx->synchronize_stream(ctx->current_stream());
    return;
  }
  ctx->copy_device_to_host(bytes, name);
  if (host_pinned && non_blocking) return;
  ctx->synchronize(name);
  if (!host_pinned) ctx->stage_host_copy(bytes, "pageable staging");
}
}  // namespace

Tensor Tensor::pin_memory() const {
  const auto& s = checked();
  if (!s.device.is_cpu()) fail("pin_memory: cannot pin a '{}' tensor: only dense CPU tensors can be pinned", s.device.str());
  if (s.pinned) return *this;
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, s.device, "aten::pin_memory");
  out.impl_->pinned = true;
  if (ctx) ctx->stage_host_copy(out.nbytes(), "aten::pin_memory");
  return out;
}

Tensor Tensor::to(Device device, bool non_blocking) const {
  const auto& s = checked();
  if (s.device.type() == device.type()) return *this;
  if (s.device.is_meta()) fail("Cannot copy out of meta tensor; no data! Please consider using to_empty()");
  detail::no_backward({this}, "to(device)");
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor out = detail::make_tensor(ctx, s.sizes, s.dtype, device, "aten::to");
  // A new host tensor is pageable, unless the copy is non_blocking: PyTorch's _to_copy then
  // allocates it pinned, so that the copy runs asynchronously and the host does not wait.
  const bool pin_out = non_blocking && s.device.is_cuda() && device.is_cpu();
  if (pin_out) out.impl_->pinned = true;
  if (ctx) {
    const std::uint64_t bytes = out.nbytes();
    if (bytes == 0 || device.is_meta()) {
      ctx->host_op("aten::to");
    } else {
      host_device_copy(ctx, bytes, device.is_cuda(), device.is_cuda() ? s.pinned : pin_out, non_blocking, "aten::to");
    }
  }
  return out;
}

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  const auto& s = checked();
  RecordOpScope scope;
  if (scope.recording()) record_op("aten.copy_.default", {RecordedArg::of(*this), RecordedArg::of(src)}, {*this});
  detail::check_defined(src, "copy_", "src");
  const auto& from = impl_of(src);
  if (!detail::broadcasts_to(from.sizes, s.sizes)) {
    fail("copy_: the source of shape {} doesn't match (does not broadcast to) the destination's shape {}",
         format_sizes(from.sizes), format_sizes(s.sizes));
  }
  if (autograd::GradMode::is_enabled() && requires_grad() && is_leaf()) {
    fail("copy_: a leaf Variable that requires grad is being used in an in-place operation.");
  }
  if (autograd::any_requires_grad({&src})) {
    // This tensor now holds src's values: the gradient flows to src (summed where it broadcast).
    if (s.device.type() != from.device.type()) detail::no_backward({&src}, "copy_ across devices");
    Sizes src_sizes = from.sizes;
    autograd::record("CopyBackwards", {&src}, {this}, {},
                   [src_sizes](detail::Grads& g, detail::Grads&, const autograd::Node&) {
                     return detail::Grads{detail::sum_to(g[0], src_sizes)};
                   });
  } else if (autograd::any_requires_grad({this})) {
    // Overwritten by values that need no gradient: nothing flows back into what it held before
    // (PyTorch's CopyBackwards gives that history zeros), though it still requires grad.
    autograd::record("CopyBackwards", {this}, {this}, {},
                     [](detail::Grads&, detail::Grads&, const autograd::Node&) { return detail::Grads{Tensor()}; });
  }
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) return *this;
  if (s.device.type() == from.device.type()) {
    detail::dispatch(ctx, detail::elementwise_op(runtime::OpKind::copy, s.numel, s.dtype), "aten::copy_", s.device,
                     s.numel == 0);
  } else if (from.device.is_meta()) {
    fail("copy_: cannot copy out of meta tensor; no data!");
  } else if (nbytes() == 0 || s.device.is_meta()) {
    ctx->host_op("aten::copy_");
  } else {
    const bool to_device = s.device.is_cuda();
    host_device_copy(ctx, nbytes(), to_device, to_device ? from.pinned : s.pinned, non_blocking, "aten::copy_");
  }
  return *this;
}

Tensor& Tensor::fill_(double) {
  const auto& s = checked();
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(runtime::OpKind::copy, s.numel, s.dtype),
                   "aten::fill_", s.device, s.numel == 0);
  return *this;
}

void Tensor::item_sync() const {
  const auto& s = checked();
  if (s.numel != 1) fail("item: a Tensor with {} elements cannot be converted to Scalar", s.numel);
  if (s.device.is_meta()) fail("Tensor.item() cannot be called on meta tensors");
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) return;
  if (s.device.is_cpu()) {
    ctx->host_op("aten::item");
    return;
  }
  host_device_copy(ctx, nbytes(), false, false, false, "aten::item");
}

// --- Math members: the free functions ---

Tensor Tensor::matmul(const Tensor& other) const { return torch::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return torch::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return torch::bmm(*this, other); }
Tensor Tensor::add(const Tensor& other) const { return torch::add(*this, other); }
Tensor Tensor::sub(const Tensor& other) const { return torch::sub(*this, other); }
Tensor Tensor::mul(const Tensor& other) const { return torch::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return torch::div(*this, other); }
Tensor Tensor::add(double other) const { return *this + other; }
Tensor Tensor::sub(double other) const { return *this - other; }
Tensor Tensor::mul(double other) const { return *this * other; }
Tensor Tensor::div(double other) const { return *this / other; }
Tensor Tensor::softmax(std::int64_t dim) const { return torch::softmax(*this, dim); }
Tensor Tensor::log_softmax(std::int64_t dim) const { return torch::log_softmax(*this, dim); }
Tensor Tensor::argmax(std::int64_t dim, bool keepdim) const { return torch::argmax(*this, dim, keepdim); }
Tensor Tensor::gelu() const { return torch::gelu(*this); }
Tensor Tensor::relu() const { return torch::relu(*this); }
Tensor Tensor::silu() const { return torch::silu(*this); }
Tensor Tensor::tanh() const { return torch::tanh(*this); }
Tensor Tensor::sigmoid() const { return torch::sigmoid(*this); }
Tensor Tensor::neg() const { return -*this; }

}  // namespace syntorch::torch
