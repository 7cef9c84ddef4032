// allgather: every rank ends with all ranks' shares; `bytes` is the gathered buffer
// (collectives/ring.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring"};
}  // namespace

extern constinit const OpType allgather_op = communication_type(OpKind::allgather, "allgather", kImpls);

}  // namespace syntorch::runtime::ops
