// layernorm: normalise each row of [rows, cols] to zero mean and unit variance, then scale and
// shift. Per element in fp32: mean and variance (Welford), normalise, scale, shift (8 operations).
// Implementations: fused (one pass), torch (PyTorch's native statistics and normalising
// kernels): kernels/norm.cpp.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused", "torch"};
}  // namespace

extern constinit const OpType layernorm_op = norm_type<detail::RowCost{8, 1}>(OpKind::layernorm, "layernorm", kImpls);

}  // namespace syntorch::runtime::ops
