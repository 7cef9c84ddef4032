// sort: each row's `cols` values sorted, with their int64 positions (sort, argsort, median's
// selection), by a segmented radix sort (kernels/reduce.cpp: lower_sort).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType sort_op{
    .kind = OpKind::sort,
    .name = "sort",
    .params = kRowsParams,
    .implementations = kFusedOnly,
    .check = &check_rows,
    .describe = &describe_rows,
    .flops = [](const OpDesc& op) { return rows_elements(op) * 4.0 * element_bytes(op.dtype); },
    // The values read, and values and positions written, once.
    .min_bytes = [](const OpDesc& op) { return rows_elements(op) * (2.0 * element_bytes(op.dtype) + 8.0); },
    .lower = &detail::lower_sort,
};

}  // namespace syntorch::runtime::ops
