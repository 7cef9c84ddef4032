// sgd: one SGD step over `elements` parameters in `tensors` tensors, with a momentum buffer
// (momentum 1) or without (0): p -= lr * g, or buf = m * buf + g, p -= lr * buf.
// Fused in one multi-tensor kernel (_fused_sgd_): kernels/optimizer.cpp.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused"};
constexpr OpParam kParams[] = {{"elements", "parameters updated (optimizer steps)", &OpDesc::elements},
                               {"tensors", "parameter tensors (optimizer steps)", &OpDesc::batch},
                               {"momentum", "momentum buffers per parameter (0 or 1)", &OpDesc::k, nullptr, 1}};
}  // namespace

extern constinit const OpType sgd_op{
    .kind = OpKind::sgd,
    .name = "sgd",
    .params = kParams,
    .implementations = kImpls,
    .defaults = &optimizer_defaults,
    .check = &check_optimizer,
    .describe =
        [](const OpDesc& op) {
          return fmt::format("sgd elements={} tensors={} momentum={} {}", op.elements, op.batch, op.k,
                             dtype_name(op.dtype));
        },
    .flops = [](const OpDesc& op) { return (op.k ? 4.0 : 2.0) * static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return elements_bytes(op, op.k ? 5 : 3); },
    .lower = &detail::lower_sgd,
};

}  // namespace syntorch::runtime::ops
