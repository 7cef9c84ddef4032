// allreduce: every rank ends with the elementwise sum of all ranks' buffers of `bytes`; as a ring,
// a double binary tree, reduced in the switch (within a node, or in each node's switch with a ring
// between nodes: nvlstree), or directly between every pair on a full mesh (collectives/).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring", "tree", "in_switch", "nvlstree", "direct"};
}  // namespace

extern constinit const OpType allreduce_op = communication_type(OpKind::allreduce, "allreduce", kImpls);

}  // namespace syntorch::runtime::ops
