// allreduce: every rank ends with the elementwise sum of all ranks' buffers of `bytes`; as a ring,
// a double binary tree, or reduced in the switch, or directly
// between every pair on a full mesh (collectives/).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring", "tree", "in_switch", "direct"};
}  // namespace

extern constinit const OpType allreduce_op = communication_type(OpKind::allreduce, "allreduce", kImpls);

}  // namespace syntorch::runtime::ops
