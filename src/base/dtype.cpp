#include "syntorch/base/dtype.hpp"

namespace syntorch {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
    case DType::int8: return "int8";
    case DType::fp4: return "fp4";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> out;
  for (DType t : kAllDTypes) out.emplace_back(dtype_name(t));
  return out;
}

unsigned dtype_bits(DType t) {
  switch (t) {
    case DType::fp64: return 64;
    case DType::fp32:
    case DType::tf32: return 32;
    case DType::fp16:
    case DType::bf16: return 16;
    case DType::fp8:
    case DType::int8: return 8;
    case DType::fp4: return 4;
  }
  return 0;
}

}  // namespace syntorch
