// broadcast: the root's `bytes` end on every rank (collectives/chain.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring"};
}  // namespace

extern constinit const OpType broadcast_op = communication_type(OpKind::broadcast, "broadcast", kImpls);

}  // namespace syntorch::runtime::ops
