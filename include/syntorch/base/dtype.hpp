#pragma once
// Element types of tensors and of the arithmetic a device can do, with their sizes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace syntorch {

enum class DType : std::uint8_t { fp64, fp32, tf32, fp16, bf16, fp8, int8, fp4 };

inline constexpr DType kAllDTypes[] = {DType::fp64, DType::fp32, DType::tf32, DType::fp16,
                                       DType::bf16, DType::fp8,  DType::int8, DType::fp4};

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::vector<std::string> dtype_names();
// Storage size of one element in bits (tf32 is stored as fp32; fp4 packs two per byte).
unsigned dtype_bits(DType t);

}  // namespace syntorch
