// layernorm_backward: the gradients of LayerNorm over [rows, cols] from x and dy: dx (per element
// in fp32: recompute x-hat, the two row sums of dy*gamma and dy*gamma*x-hat, combine; about 10
// operations) and the weight and bias gradients summed over rows. Implementations: fused, torch
// (kernels/norm.cpp, lower_norm_backward).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused", "torch"};
}  // namespace

extern constinit const OpType layernorm_backward_op =
    norm_type<detail::RowCost{10, 1, 2}, detail::lower_norm_backward>(OpKind::layernorm_backward, "layernorm_backward", kImpls);

}  // namespace syntorch::runtime::ops
