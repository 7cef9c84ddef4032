// fused: one kernel a compiler generated for a chain of elementwise ops and reductions (what
// torch.compile's Inductor emits as a Triton kernel): one streaming pass over its iteration space
// that reads its inputs and writes its live outputs once, whatever the chain computes in between
// in registers. Its parameters are the totals the compiler's fusion planner counted.

#include <fmt/format.h>

#include <algorithm>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {
    {"elements", "the iteration space (the largest tensor the kernel walks), in elements", &OpDesc::elements},
    {"bytes", "bytes the kernel reads from HBM", &OpDesc::bytes},
    {"written_bytes", "bytes the kernel writes to HBM", &OpDesc::written_bytes},
    {"ops", "fp32 operations, in total", &OpDesc::ops}};
constexpr std::string_view kImpls[] = {"auto", "generated"};
}  // namespace

extern constinit const OpType fused_op{
    .kind = OpKind::fused,
    .name = "fused",
    .params = kParams,
    .implementations = kImpls,
    .check = [](const OpDesc& op, OpCheck& c) { c.need(op.elements, "elements"); },
    .describe =
        [](const OpDesc& op) {
          return fmt::format("fused elements={} bytes={} written_bytes={} ops={} {}", op.elements, op.bytes,
                             op.written_bytes, op.ops, dtype_name(op.dtype));
        },
    .flops = [](const OpDesc& op) { return static_cast<double>(op.ops); },
    .min_bytes = [](const OpDesc& op) { return static_cast<double>(op.bytes) + static_cast<double>(op.written_bytes); },
    .lower =
        [](const OpDesc& op, const detail::LowerContext& cx) {
          const double elements = static_cast<double>(std::max<std::uint64_t>(op.elements, 1));
          Kernel k = detail::stream_kernel(cx, {"fused", elements, static_cast<double>(op.bytes) / elements,
                                                static_cast<double>(op.written_bytes) / elements,
                                                static_cast<double>(op.ops) / elements});
          k.impl = "generated";
          k.why.push_back(fmt::format("a generated kernel over {} elements: reads {} B and writes {} B once", op.elements,
                                      op.bytes, op.written_bytes));
          return std::vector<Kernel>{std::move(k)};
        },
    .kernels_named_by_launch = true,
};

}  // namespace syntorch::runtime::ops
