// scatter: dest[index[i]] = src[i] along a dim (scatter_, scatter_add_, index_add_): `elements`
// index positions, each an int64 index and a value read and a value written (kernels/reduce.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType scatter_op{
    .kind = OpKind::scatter,
    .name = "scatter",
    .params = kElementsParam,
    .implementations = kFusedOnly,
    .check = &check_elements,
    .describe = &describe_elements,
    .flops = [](const OpDesc& op) { return static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return static_cast<double>(op.elements) * (2.0 * element_bytes(op.dtype) + 8.0); },
    .lower = &detail::lower_indexed,
};

}  // namespace syntorch::runtime::ops
