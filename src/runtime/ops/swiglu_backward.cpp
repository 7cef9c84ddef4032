// swiglu_backward: the gradients of silu(gate) * up for `elements` outputs: one kernel reads dy,
// gate and up and writes d(gate) and d(up) side by side (the fused activation's backward in
// Megatron, Transformer Engine and Liger): about 12 fp32 operations per output.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
std::vector<Kernel> lower(const OpDesc& op, const detail::LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  std::vector<Kernel> ks{detail::stream_kernel(cx, {"swiglu_backward", static_cast<double>(op.elements), 3 * e, 2 * e, 12})};
  ks[0].why.push_back(fmt::format("{} outputs: dy, gate and up read once, both input gradients written once",
                                  op.elements));
  return ks;
}
}  // namespace

extern constinit const OpType swiglu_backward_op{
    .kind = OpKind::swiglu_backward,
    .name = "swiglu_backward",
    .params = kElementsParam,
    .implementations = kFusedOnly,
    .check = &check_elements,
    .describe = &describe_elements,
    .flops = [](const OpDesc& op) { return 12.0 * static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return elements_bytes(op, 5); },
    .lower = &lower,
};

}  // namespace syntorch::runtime::ops
