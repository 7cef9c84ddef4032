// amax: the largest (or smallest: amin, max, min) of each row's `cols` elements: one comparison
// per input, one result per row (its int64 position too when asked: max(dim) and min(dim), in the
// same pass; the positions are counted with the result).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType amax_op =
    row_pass_type<detail::RowPassCost{.ops_per_input = 1, .outputs_per_row = 1, .index_bytes_per_row = 8}>(
        OpKind::amax, "amax");

}  // namespace syntorch::runtime::ops
