#pragma once
// The vocabulary of the torch layer, as libtorch (c10) names it: scalar types, devices, tensor
// options, integer-list arguments, and the error every shape or type check throws.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/dtype.hpp"

namespace syntorch::torch {

// A check failed: a shape, dtype or device that the op cannot take. The message names the op and
// the shapes involved, in libtorch's words where libtorch has them. Derives from
// std::invalid_argument, so callers may catch either.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An element type as libtorch names it. Floating types map one to one onto the runtime's DType;
// integer and boolean types (indices, masks) reach the runtime as the DType of the same width,
// since the kernels that touch them only move bytes. Complex types (rotary tables in
// torch.polar's form) reach it as fp64 elements of their width: ComplexFloat one, ComplexDouble two.
enum class ScalarType : std::uint8_t {
  Double, Float, Half, BFloat16, Float8_e4m3fn, Float4, Char, Int, Long, Bool, ComplexFloat, ComplexDouble, Byte
};
using Dtype = ScalarType;

inline constexpr ScalarType kFloat64 = ScalarType::Double;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kFloat32 = ScalarType::Float;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kFloat16 = ScalarType::Half;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat8 = ScalarType::Float8_e4m3fn;
inline constexpr ScalarType kFloat8_e4m3fn = ScalarType::Float8_e4m3fn;
inline constexpr ScalarType kFloat4 = ScalarType::Float4;
inline constexpr ScalarType kInt8 = ScalarType::Char;
inline constexpr ScalarType kChar = ScalarType::Char;
inline constexpr ScalarType kUInt8 = ScalarType::Byte;
inline constexpr ScalarType kByte = ScalarType::Byte;
inline constexpr ScalarType kInt32 = ScalarType::Int;
inline constexpr ScalarType kInt = ScalarType::Int;
inline constexpr ScalarType kInt64 = ScalarType::Long;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
inline constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;

// Bits per element (fp4 packs two per byte).
constexpr unsigned element_bits(ScalarType t) {
  constexpr std::array<unsigned, 13> bits{64, 32, 16, 16, 8, 4, 8, 32, 64, 8, 64, 128, 8};
  return bits[static_cast<std::size_t>(t)];
}
// libtorch's names: "Half", "Float", "Long", ...
std::string_view scalar_type_name(ScalarType t);
bool is_floating_point(ScalarType t);
bool is_complex(ScalarType t);
// The complex type of a real one's precision (Float -> ComplexFloat, Double -> ComplexDouble) and
// back; torch::Error for types without one.
ScalarType to_complex(ScalarType t);
ScalarType to_real(ScalarType t);
// PyTorch's type promotion of two tensor dtypes (torch.promote_types): the wider floating type
// (Half with BFloat16 gives Float), a floating type over an integral one, the wider integer.
// Empty where PyTorch refuses (the fp8 and fp4 types with any other). Byte with Char gives Int
// (PyTorch's Short, which is not modelled: the narrowest type here that holds both).
std::optional<ScalarType> promote_types(ScalarType a, ScalarType b);
// The runtime's DType for kernels on this type: itself for floating types, the DType of the same
// width for integers and bool (Long -> fp64, Int -> fp32, Char, Byte and Bool -> int8).
DType to_runtime_dtype(ScalarType t);
// The ScalarType of a runtime DType (tf32 is stored as Float).
ScalarType from_runtime_dtype(DType t);

// The default dtype of factories and of module parameters: Float, as in libtorch. Per thread: a
// rank's program runs on its own thread and stands for one process of a real job, so each
// program sets its own (libtorch's is per process), and ranks running at once never see each
// other's setting.
void set_default_dtype(ScalarType t);
ScalarType get_default_dtype();
// torch.set_float32_matmul_precision: "highest" (fp32 products in fp32, PyTorch's default), or
// "high" / "medium" (on the TF32 matrix units, where the device has them). Per thread, as the
// default dtype; torch::Error naming the choices for another name.
void set_float32_matmul_precision(std::string_view precision);
std::string_view get_float32_matmul_precision();
// torch.backends.cudnn.allow_tf32: fp32 convolutions on the TF32 matrix units (true, PyTorch's
// default, unlike matmul's) or in fp32. Per thread, as the matmul precision.
void set_cudnn_allow_tf32(bool allow);
bool get_cudnn_allow_tf32();
// torch.backends.cuda's switches over scaled_dot_product_attention's backends
// (enable_flash_sdp, enable_mem_efficient_sdp, enable_math_sdp, enable_cudnn_sdp): which ones
// it may choose from, all by default. Per thread, as the matmul precision.
enum class SdpBackend : std::uint8_t { flash = 1, mem_efficient = 2, math = 4, cudnn = 8 };
inline constexpr std::uint8_t kAllSdpBackends = 0x0f;
void set_sdp_enabled(SdpBackend backend, bool enabled);
bool sdp_enabled(SdpBackend backend);
std::uint8_t sdp_enabled_mask();  // the enabled backends' bits
// Sets the default dtype for its lifetime, restoring the previous one after.
class DefaultDtypeGuard {
 public:
  explicit DefaultDtypeGuard(ScalarType t) : previous_(get_default_dtype()) { set_default_dtype(t); }
  ~DefaultDtypeGuard() { set_default_dtype(previous_); }
  DefaultDtypeGuard(const DefaultDtypeGuard&) = delete;
  DefaultDtypeGuard& operator=(const DefaultDtypeGuard&) = delete;

 private:
  ScalarType previous_;
};

// Where a tensor lives: the simulated device of the current rank (CUDA), or host memory (CPU),
// which the simulation does not allocate and whose ops are host-side only (no kernel).
// Meta: shapes and dtypes only, as PyTorch's meta device (no memory, no kernels: a model built
// there is materialised with to_empty).
enum class DeviceType : std::uint8_t { CPU, CUDA, Meta };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;

// A device and its index (-1: the current one).
class Device {
 public:
  constexpr Device(DeviceType type, int index = -1) : type_(type), index_(static_cast<std::int16_t>(index)) {}  // NOLINT
  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_meta() const { return type_ == DeviceType::Meta; }
  std::string str() const;  // "cuda", "cuda:1", "cpu", "meta"
  friend constexpr bool operator==(Device a, Device b) { return a.type_ == b.type_ && a.index_ == b.index_; }

 private:
  DeviceType type_;
  std::int16_t index_;
};

// How a factory makes a tensor: dtype (default: get_default_dtype()) and device (default: CUDA,
// the simulated device). Built as in libtorch: TensorOptions().dtype(kHalf).device(kCUDA), or
// implicitly from a ScalarType or a Device.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}         // NOLINT: implicit, as libtorch's
  TensorOptions(Device d) : device_(d) {}            // NOLINT
  TensorOptions(DeviceType d) : device_(Device(d)) {}  // NOLINT

  TensorOptions dtype(ScalarType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  // A factory's tensor is a leaf that requires grad (torch::randn(..., opts.requires_grad(true))).
  TensorOptions requires_grad(bool requires_grad) const {
    TensorOptions o = *this;
    o.requires_grad_ = requires_grad;
    return o;
  }
  bool requires_grad() const { return requires_grad_; }
  // A host tensor in page-locked memory (torch::empty(..., opts.pinned_memory(true))).
  TensorOptions pinned_memory(bool pinned) const {
    TensorOptions o = *this;
    o.pinned_memory_ = pinned;
    return o;
  }
  bool pinned_memory() const { return pinned_memory_; }

  ScalarType dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  Device device() const { return device_; }
  bool has_dtype() const { return dtype_.has_value(); }

 private:
  std::optional<ScalarType> dtype_;
  bool requires_grad_ = false;
  bool pinned_memory_ = false;
  Device device_{DeviceType::CUDA};
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }

// A borrowed list of integers (sizes, dims), as libtorch's IntArrayRef: built from a braced list,
// a std::vector, or a single integer, and valid for the call it is passed to.
class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const std::int64_t& one) : data_(&one), size_(1) {}  // NOLINT
  // The list's array lives until the end of the full expression, as long as the call it is
  // passed to (libtorch's ArrayRef relies on the same).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<std::int64_t> list)  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<std::int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <std::size_t N>
  constexpr IntArrayRef(const std::array<std::int64_t, N>& a) : data_(a.data()), size_(N) {}  // NOLINT
  constexpr IntArrayRef(const std::int64_t* data, std::size_t size) : data_(data), size_(size) {}

  constexpr const std::int64_t* data() const { return data_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const std::int64_t* begin() const { return data_; }
  constexpr const std::int64_t* end() const { return data_ + size_; }
  constexpr std::int64_t operator[](std::size_t i) const { return data_[i]; }
  constexpr std::int64_t front() const { return data_[0]; }
  constexpr std::int64_t back() const { return data_[size_ - 1]; }
  std::vector<std::int64_t> vec() const { return {data_, data_ + size_}; }

  friend bool operator==(IntArrayRef a, IntArrayRef b) {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i) {
      if (a.data_[i] != b.data_[i]) return false;
    }
    return true;
  }

 private:
  const std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// "[2, 3, 4]", as libtorch prints sizes in its messages.
std::string format_sizes(IntArrayRef sizes);

}  // namespace syntorch::torch
