// rmsnorm_backward: the gradients of RMSNorm over [rows, cols] from x and dy: dx (recompute
// x/rms, one row sum of dy*w*x, combine; about 7 fp32 operations an element) and the weight
// gradient summed over rows. Implementations: fused, torch (kernels/norm.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused", "torch"};
}  // namespace

extern constinit const OpType rmsnorm_backward_op =
    norm_type<detail::RowCost{7, 1, 2}, detail::lower_norm_backward>(OpKind::rmsnorm_backward, "rmsnorm_backward", kImpls);

}  // namespace syntorch::runtime::ops
