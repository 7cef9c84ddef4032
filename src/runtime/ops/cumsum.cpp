// cumsum: the running sum along each row (a scan; cumprod alike): one add per input, every
// element written.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType cumsum_op =
    row_pass_type<detail::RowPassCost{.ops_per_input = 1, .outputs_per_row = 0, .scan = true}>(OpKind::cumsum,
                                                                                                 "cumsum");

}  // namespace syntorch::runtime::ops
