// all: whether every (any: some) element of each row is non-zero: one test per input, one bool
// per row.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType all_op =
    row_pass_type<detail::RowPassCost{.ops_per_input = 1, .outputs_per_row = 1}>(OpKind::all, "all");

}  // namespace syntorch::runtime::ops
