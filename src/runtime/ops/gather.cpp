// gather: out[i] = src[index[i]] along a dim (torch.gather, take_along_dim): `elements`
// index positions, each an int64 index and a value read and a value written (kernels/reduce.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType gather_op{
    .kind = OpKind::gather,
    .name = "gather",
    .params = kElementsParam,
    .implementations = kFusedOnly,
    .check = &check_elements,
    .describe = &describe_elements,
    .flops = [](const OpDesc& op) { return static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return static_cast<double>(op.elements) * (2.0 * element_bytes(op.dtype) + 8.0); },
    .lower = &detail::lower_indexed,
};

}  // namespace syntorch::runtime::ops
