// swiglu: silu(gate) * up over a tensor [..., 2 x width] holding the gate and up projections
// side by side (Shazeer, "GLU Variants Improve Transformer", 2020; Llama's MLP); `elements` is
// the output's size. Fused, one kernel reads both halves and writes the product (vLLM's
// silu_and_mul, TensorRT-LLM's gated activation); unfused, silu writes its result to HBM and a
// mul reads it back (Hugging Face's act_fn(gate) * up).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused", "unfused"};

std::vector<Kernel> lower(const OpDesc& op, const detail::LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double n = static_cast<double>(op.elements);
  std::vector<Kernel> fused{detail::stream_kernel(cx, {"swiglu", n, 2 * e, e, 6})};
  fused[0].why.push_back(fmt::format("{} outputs: gate and up read once, the product written once", op.elements));
  std::vector<Kernel> unfused{detail::stream_kernel(cx, {"swiglu: silu", n, e, e, 5}),
                              detail::stream_kernel(cx, {"swiglu: mul", n, 2 * e, e, 1})};
  for (Kernel& k : unfused) k.impl = "unfused";
  unfused[0].why.push_back("silu(gate) goes through HBM before the multiply");
  return detail::choose_implementation({std::move(fused), std::move(unfused)}, cx);
}
}  // namespace

extern constinit const OpType swiglu_op{
    .kind = OpKind::swiglu,
    .name = "swiglu",
    .params = kElementsParam,
    .implementations = kImpls,
    .check = &check_elements,
    .describe = &describe_elements,
    .flops = [](const OpDesc& op) { return 6.0 * static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return elements_bytes(op, 3); },
    .lower = &lower,
};

}  // namespace syntorch::runtime::ops
