// foreach: one of PyTorch's _foreach_ ops (mul_, add_, lerp_, addcmul_, sqrt, addcdiv_, norm, ...)
// over `elements` elements in `tensors` tensors: `inputs` tensor lists read (the one written
// included when in place), one written, as one multi-tensor-apply kernel a launch
// (kernels/optimizer.cpp). The pieces of PyTorch's default (foreach) optimizer steps and of
// gradient clipping and scaling.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"elements", "parameters updated (optimizer steps)", &OpDesc::elements},
                               {"tensors", "parameter tensors (optimizer steps)", &OpDesc::batch},
                               {"inputs", "tensor lists a foreach op reads (1 to 4)", &OpDesc::k, nullptr, 4}};
}  // namespace

extern constinit const OpType foreach_op{
    .kind = OpKind::foreach,
    .name = "foreach",
    .params = kParams,
    .implementations = kFusedOnly,
    .defaults =
        [](OpDesc& op) {
          optimizer_defaults(op);
          if (op.k == 0) op.k = 1;
        },
    .check = &check_optimizer,
    .describe =
        [](const OpDesc& op) {
          return fmt::format("foreach elements={} tensors={} inputs={} {}", op.elements, op.batch, op.k,
                             dtype_name(op.dtype));
        },
    .flops = [](const OpDesc& op) { return static_cast<double>(op.k) * static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return elements_bytes(op, static_cast<double>(op.k) + 1); },
    .lower = &detail::lower_foreach,
};

}  // namespace syntorch::runtime::ops
