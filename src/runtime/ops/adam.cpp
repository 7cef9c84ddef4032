// adam: one Adam or AdamW step over `elements` parameters in `tensors` tensors, the moments in the
// parameters' dtype (fp32 master weights and states under mixed precision): per element read the
// parameter, its gradient and both moments, write the parameter and both moments (Kingma and Ba,
// 2015; Loshchilov and Hutter's decoupled weight decay, 2019), fused in one multi-tensor kernel
// (torch's _fused_adam_/_fused_adamw_, Apex's FusedAdam): kernels/optimizer.cpp. PyTorch's
// default foreach step is a sequence of foreach ops instead (torch::optim).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "fused"};
}  // namespace

extern constinit const OpType adam_op{
    .kind = OpKind::adam,
    .name = "adam",
    .params = kOptimizerParams,
    .implementations = kImpls,
    .defaults = &optimizer_defaults,
    .check = &check_optimizer,
    .describe = &describe_optimizer,
    // Moments, bias corrections, the update and the decay: about 12 fp32 operations an element.
    .flops = [](const OpDesc& op) { return 12.0 * static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return elements_bytes(op, 7); },
    .lower = &detail::lower_adam,
};

}  // namespace syntorch::runtime::ops
