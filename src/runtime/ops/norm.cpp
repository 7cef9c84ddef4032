// norm: each row's vector p-norm (linalg_vector_norm; the 2-norm a gradient clip or an
// F.normalize takes): a multiply-add per input, a root per row.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType norm_op =
    row_pass_type<detail::RowPassCost{.ops_per_input = 2, .outputs_per_row = 1}>(OpKind::norm, "norm");

}  // namespace syntorch::runtime::ops
