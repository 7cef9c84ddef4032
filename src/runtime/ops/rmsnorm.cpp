// rmsnorm: scale each row of [rows, cols] by the inverse root of its mean square, then by a weight.
// Per element in fp32: sum of squares, scale, weight (5 operations). Implementations: fused (one
// pass), torch (PyTorch's native statistics and normalising kernels), eager (Hugging Face's
// composition of elementwise kernels): kernels/norm.cpp.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused", "torch", "eager"};
}  // namespace

extern constinit const OpType rmsnorm_op = norm_type<detail::RowCost{5, 1}>(OpKind::rmsnorm, "rmsnorm", kImpls);

}  // namespace syntorch::runtime::ops
