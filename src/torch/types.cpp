#include "syntorch/torch/types.hpp"

#include <fmt/format.h>

namespace syntorch::torch {

namespace {
constexpr std::array<std::string_view, 13> kNames{"Double", "Float", "Half",  "BFloat16",     "Float8_e4m3fn",
                                                  "Float4", "Char",  "Int",   "Long",         "Bool",
                                                  "ComplexFloat",    "ComplexDouble", "Byte"};
// Per rank program (each on its own thread): PyTorch keeps these per process, and each simulated
// rank is a process of its own, so one rank's setting must not change another's.
thread_local ScalarType t_default_dtype = ScalarType::Float;
thread_local std::string_view t_matmul_precision = "highest";
thread_local std::uint8_t t_sdp_enabled = kAllSdpBackends;
}  // namespace

std::string_view scalar_type_name(ScalarType t) { return kNames[static_cast<std::size_t>(t)]; }

bool is_floating_point(ScalarType t) {
  switch (t) {
    case ScalarType::Double:
    case ScalarType::Float:
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float4: return true;
    default: return false;
  }
}

bool is_complex(ScalarType t) { return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble; }

ScalarType to_complex(ScalarType t) {
  switch (t) {
    case ScalarType::Half:  // a ComplexHalf is not modelled: complex math runs in fp32 at least
    case ScalarType::BFloat16:
    case ScalarType::Float:
    case ScalarType::ComplexFloat: return ScalarType::ComplexFloat;
    case ScalarType::Double:
    case ScalarType::ComplexDouble: return ScalarType::ComplexDouble;
    default: throw Error(fmt::format("expected a floating point type for a complex one, got {}", scalar_type_name(t)));
  }
}

ScalarType to_real(ScalarType t) {
  switch (t) {
    case ScalarType::ComplexFloat: return ScalarType::Float;
    case ScalarType::ComplexDouble: return ScalarType::Double;
    default: throw Error(fmt::format("expected a complex type, got {}", scalar_type_name(t)));
  }
}

std::optional<ScalarType> promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  auto narrow_float = [](ScalarType t) { return t == ScalarType::Float8_e4m3fn || t == ScalarType::Float4; };
  if (narrow_float(a) || narrow_float(b)) return std::nullopt;
  if (is_complex(a) || is_complex(b)) {
    // Complex over everything; ComplexDouble where either side has double precision.
    const bool wide = a == ScalarType::ComplexDouble || b == ScalarType::ComplexDouble || a == ScalarType::Double ||
                      b == ScalarType::Double;
    return wide ? ScalarType::ComplexDouble : ScalarType::ComplexFloat;
  }
  const bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;
  // Within a category, by rank: Double > Float > Half, BFloat16 (which meet at Float); Long >
  // Int > Char, Byte (which meet at Int, PyTorch's Short being absent) > Bool.
  auto rank = [](ScalarType t) {
    switch (t) {
      case ScalarType::Double: return 3;
      case ScalarType::Float: return 2;
      case ScalarType::Half:
      case ScalarType::BFloat16: return 1;
      case ScalarType::Long: return 3;
      case ScalarType::Int: return 2;
      case ScalarType::Char:
      case ScalarType::Byte: return 1;
      default: return 0;
    }
  };
  if (rank(a) == rank(b)) return fa ? ScalarType::Float : ScalarType::Int;  // Half with BFloat16, Char with Byte
  return rank(a) > rank(b) ? a : b;
}

DType to_runtime_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Double: return DType::fp64;
    case ScalarType::Float: return DType::fp32;
    case ScalarType::Half: return DType::fp16;
    case ScalarType::BFloat16: return DType::bf16;
    case ScalarType::Float8_e4m3fn: return DType::fp8;
    case ScalarType::Float4: return DType::fp4;
    case ScalarType::Char:
    case ScalarType::Byte:
    case ScalarType::Bool: return DType::int8;
    case ScalarType::Int: return DType::fp32;
    case ScalarType::Long:
    case ScalarType::ComplexFloat:
    case ScalarType::ComplexDouble: return DType::fp64;
  }
  return DType::fp32;
}

ScalarType from_runtime_dtype(DType t) {
  switch (t) {
    case DType::fp64: return ScalarType::Double;
    case DType::fp32:
    case DType::tf32: return ScalarType::Float;
    case DType::fp16: return ScalarType::Half;
    case DType::bf16: return ScalarType::BFloat16;
    case DType::fp8: return ScalarType::Float8_e4m3fn;
    case DType::int8: return ScalarType::Char;
    case DType::fp4: return ScalarType::Float4;
  }
  return ScalarType::Float;
}

void set_default_dtype(ScalarType t) { t_default_dtype = t; }
ScalarType get_default_dtype() { return t_default_dtype; }

std::string Device::str() const {
  const char* type = type_ == DeviceType::CUDA ? "cuda" : type_ == DeviceType::Meta ? "meta" : "cpu";
  return index_ < 0 ? std::string(type) : fmt::format("{}:{}", type, index_);
}

std::string format_sizes(IntArrayRef sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  out += "]";
  return out;
}

void set_float32_matmul_precision(std::string_view precision) {
  for (std::string_view choice : {"highest", "high", "medium"}) {
    if (precision == choice) {
      t_matmul_precision = choice;
      return;
    }
  }
  throw Error(fmt::format("set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\", got \"{}\"",
                          precision));
}

std::string_view get_float32_matmul_precision() { return t_matmul_precision; }

namespace {
// Per rank's program, as the matmul precision above: each stands for a process of its own.
thread_local bool t_cudnn_allow_tf32 = true;
}  // namespace
void set_cudnn_allow_tf32(bool allow) { t_cudnn_allow_tf32 = allow; }
bool get_cudnn_allow_tf32() { return t_cudnn_allow_tf32; }

void set_sdp_enabled(SdpBackend backend, bool enabled) {
  const auto bit = static_cast<std::uint8_t>(backend);
  t_sdp_enabled = static_cast<std::uint8_t>(enabled ? (t_sdp_enabled | bit) : (t_sdp_enabled & ~bit));
}
bool sdp_enabled(SdpBackend backend) { return (t_sdp_enabled & static_cast<std::uint8_t>(backend)) != 0; }
std::uint8_t sdp_enabled_mask() { return t_sdp_enabled; }

}  // namespace syntorch::torch
