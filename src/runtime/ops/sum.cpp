// sum: each of `rows` outputs the sum of its `cols` inputs (a bias gradient summed over tokens, a
// loss averaged over tokens, a gradient norm): one read of every input, one fp32 add each.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sum_op{
    .kind = OpKind::sum,
    .name = "sum",
    .params = kRowsParams,
    .implementations = kFusedOnly,
    .check = &check_rows,
    .describe = &describe_rows,
    .flops = [](const OpDesc& op) { return rows_elements(op); },
    .min_bytes =
        [](const OpDesc& op) { return (rows_elements(op) + static_cast<double>(op.rows)) * element_bytes(op.dtype); },
    .lower = &detail::lower_sum,
};

}  // namespace syntorch::runtime::ops
