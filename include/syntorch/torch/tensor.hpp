#pragma once
// torch::Tensor: libtorch's tensor as a meta tensor (sizes, strides, dtype, device; no data).
// While a rank's program runs (runtime::current_rank() is set) a tensor made by a factory or an
// op owns device memory from that rank's allocator, freed when the last handle to it, views
// included, goes away; outside a simulation tensors only carry shapes.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "syntorch/torch/types.hpp"

namespace syntorch::runtime {
class RankContext;
}

namespace syntorch::torch {

namespace autograd {
class Node;
}

namespace detail {

struct AutogradMeta;  // a tensor's gradient state (src/torch/internal.hpp)

// The state a tensor handle points at: its layout, and either the device memory it owns (a tensor
// made by a factory or op) or a reference to the tensor whose memory it views (`base`).
// Invariants: sizes and strides have dim() entries; numel is their product; a view's base owns
// memory (is not itself a view); `context` is set exactly when `handle` names a live allocation.
struct TensorImpl {
  std::atomic<std::uint32_t> refs{1};
  ScalarType dtype = ScalarType::Float;
  Device device{DeviceType::CUDA};
  bool contiguous = true;
  std::uint32_t handle = 0;
  std::int64_t numel = 1;
  std::int64_t offset = 0;  // in elements, into the base's memory
  TensorImpl* base = nullptr;
  runtime::RankContext* context = nullptr;
  std::uint64_t context_serial = 0;  // context->serial(), to recognise it (or not) when released
  std::uint64_t storage_bytes = 0;  // of the owned memory (the base's, for a view)
  AutogradMeta* autograd = nullptr;  // owned; null for tensors that never required a gradient
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::uint64_t serial = 0;  // unique over the process's tensors (implementations are reused)
  bool pinned = false;       // host memory that is page-locked (pin_memory): copies need no staging
  bool watched = false;      // its serial is reported when released (Tensor::watch_release)
};

// Drops one reference; the last one frees the memory (or the reference to the base).
void release(TensorImpl* impl) noexcept;
inline void retain(TensorImpl* impl) noexcept {
  if (impl) impl->refs.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

class Tensor {
 public:
  // An undefined tensor (defined() is false), as libtorch's default Tensor.
  Tensor() = default;
  // Takes ownership of one reference to `impl` (for the torch layer's own ops).
  explicit Tensor(detail::TensorImpl* impl) noexcept : impl_(impl) {}
  Tensor(const Tensor& other) noexcept : impl_(other.impl_) { detail::retain(impl_); }
  Tensor(Tensor&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
  Tensor& operator=(const Tensor& other) noexcept {
    detail::retain(other.impl_);
    detail::release(std::exchange(impl_, other.impl_));
    return *this;
  }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) detail::release(std::exchange(impl_, std::exchange(other.impl_, nullptr)));
    return *this;
  }
  ~Tensor() { detail::release(impl_); }

  // --- Metadata (no cost: nothing is launched) ---
  bool defined() const { return impl_ != nullptr; }
  const std::vector<std::int64_t>& sizes() const { return checked().sizes; }
  const std::vector<std::int64_t>& strides() const { return checked().strides; }
  std::int64_t size(std::int64_t dim) const;    // negative dims count from the end
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const { return static_cast<std::int64_t>(checked().sizes.size()); }
  std::int64_t ndimension() const { return dim(); }
  std::int64_t numel() const { return checked().numel; }
  ScalarType scalar_type() const { return checked().dtype; }
  ScalarType dtype() const { return checked().dtype; }
  DType runtime_dtype() const { return to_runtime_dtype(checked().dtype); }
  double element_size() const { return element_bits(checked().dtype) / 8.0; }
  std::size_t nbytes() const;  // numel x element size, rounded up to whole bytes
  Device device() const { return checked().device; }
  bool is_cuda() const { return checked().device.is_cuda(); }
  bool is_cpu() const { return checked().device.is_cpu(); }
  bool is_contiguous() const { return checked().contiguous; }
  bool is_floating_point() const { return torch::is_floating_point(checked().dtype); }
  std::int64_t storage_offset() const { return checked().offset; }
  // Bytes of device memory this tensor's storage holds (its base's, for a view; 0 when nothing
  // was allocated: meta mode, CPU tensors, empty tensors).
  std::uint64_t storage_nbytes() const { return checked().storage_bytes; }
  // Whether two tensors are the same handle target, or share memory.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool is_alias_of(const Tensor& other) const;
  std::uint32_t use_count() const { return impl_ ? impl_->refs.load(std::memory_order_relaxed) : 0; }

  // --- Views: share memory; a host-side op ("aten::view" etc.), no kernel ---
  // view: -1 infers one size; the tensor's strides must allow it (else use reshape).
  Tensor view(IntArrayRef sizes) const;
  // reshape: a view when the strides allow it, otherwise a contiguous copy (a copy kernel).
  Tensor reshape(IntArrayRef sizes) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;  // 2-D (or fewer) transpose
  Tensor permute(IntArrayRef dims) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze() const;  // drops every size-1 dim
  Tensor squeeze(std::int64_t dim) const;
  // Elements [start, end) by step along dim (start and end clamp, negative ones count from the end).
  Tensor slice(std::int64_t dim = 0, std::int64_t start = 0, std::int64_t end = INT64_MAX,
               std::int64_t step = 1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;  // removes dim
  Tensor operator[](std::int64_t index) const { return select(0, index); }
  // Broadcasts size-1 dims (stride 0); -1 keeps a size.
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  // Splits dim into pieces of split_size (the last may be smaller) / into `chunks` pieces.
  std::vector<Tensor> split(std::int64_t split_size, std::int64_t dim = 0) const;
  // Pieces of the given sizes (summing to the dim's size) along dim.
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, std::int64_t dim = 0) const;
  std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;

  // --- Copies (a copy kernel) ---
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;
  // To another dtype (a copy kernel with the new dtype's element size) or device (a host<->device
  // copy over the host link). Itself when unchanged. As PyTorch's copies: the host waits for the
  // copy (a stream synchronisation) unless non_blocking; pageable host memory is staged through a
  // pinned buffer by the host (its memcpy time: stage_host_copy). A non_blocking copy to the host
  // lands in pinned memory allocated for it (PyTorch's _to_copy) and is not waited for; a pinned
  // source copied to the device non_blocking overlaps the host's work too.
  Tensor to(ScalarType dtype) const;
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DeviceType device, bool non_blocking = false) const { return to(Device(device), non_blocking); }
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  Tensor cuda() const { return to(Device(DeviceType::CUDA)); }
  Tensor half() const { return to(ScalarType::Half); }
  Tensor to_float() const { return to(ScalarType::Float); }
  // In place: copies src (broadcast to this tensor's shape) into this tensor's memory, e.g. a new
  // K/V block into a slice of a preallocated cache. A copy kernel of numel() elements.
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  // A host tensor in page-locked memory (a new one and a host copy into it; itself when already
  // pinned), and whether it is. torch::Error for a device tensor.
  Tensor pin_memory() const;
  bool is_pinned() const { return checked().pinned; }
  Tensor& fill_(double value);  // a copy kernel of numel() elements
  Tensor& zero_() { return fill_(0.0); }

  // --- Math (member forms of the free functions in ops.hpp) ---
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor add(double other) const;
  Tensor sub(double other) const;
  Tensor mul(double other) const;
  Tensor div(double other) const;
  Tensor& add_(const Tensor& other);
  Tensor& sub_(const Tensor& other);
  Tensor& mul_(const Tensor& other);
  Tensor& div_(const Tensor& other);
  Tensor& add_(double other);
  Tensor& sub_(double other);
  Tensor& mul_(double other);
  Tensor& div_(double other);
  Tensor neg() const;
  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor gelu() const;
  Tensor relu() const;
  Tensor silu() const;
  Tensor tanh() const;
  Tensor sigmoid() const;

  // The value of a one-element tensor. Values are not simulated: this copies the element to the
  // host and waits for the device (a synchronisation), then returns T{}.
  template <typename T = double>
  T item() const {
    item_sync();
    return T{};
  }

  // --- Autograd (autograd.hpp) ---
  bool requires_grad() const;
  // Makes a leaf require (or not) a gradient, as nn.Parameter does; an op's output cannot be changed.
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }
  bool is_leaf() const;  // made by the user (no grad_fn)
  // The gradient backward accumulated into this leaf (or a tensor that retains it); undefined
  // until one arrives and after zero_grad(set_to_none).
  const Tensor& grad() const;
  Tensor& mutable_grad();
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Backpropagates from this tensor (a scalar unless `gradient` is given).
  void backward() const;
  void backward(const Tensor& gradient, bool retain_graph = false) const;
  Tensor detach() const;  // the same memory, no history, requires no gradient
  // Calls `hook` with this leaf each time backward has accumulated a gradient into its .grad
  // (torch.Tensor.register_post_accumulate_grad_hook): what DDP buckets and Megatron's main
  // gradients hang on.
  void register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook);

  detail::TensorImpl* unsafe_get_impl() const { return impl_; }
  // syntorch extension: a number no other tensor object of this process has had or will have
  // (a graph recorder names tensors by it). 0 for an undefined tensor.
  std::uint64_t unique_id() const { return impl_ != nullptr ? impl_->serial : 0; }
  // syntorch extension: the unique_id of the tensor that owns this one's memory (its base, for a
  // view; itself otherwise): two tensors share storage exactly when these are equal.
  std::uint64_t storage_id() const { return checked().base != nullptr ? checked().base->serial : checked().serial; }
  // syntorch extension: once the last handle of this tensor is gone, its unique_id is reported by
  // take_released_watched(): how a front end that keeps data per tensor elsewhere (the Python
  // functional model's values) learns when to drop it.
  void watch_release() const;

 private:
  const detail::TensorImpl& checked() const;
  void item_sync() const;

  detail::TensorImpl* impl_ = nullptr;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, double b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, double b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, double b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, double b) { return a.div_(b); }

// The unique_ids of watched tensors released since the last call (Tensor::watch_release), in
// release order; thread-safe.
std::vector<std::uint64_t> take_released_watched();

}  // namespace syntorch::torch
