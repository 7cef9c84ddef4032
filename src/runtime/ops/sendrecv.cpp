// sendrecv: one rank sends `bytes` to another over the routed path (collectives/).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "direct"};
}  // namespace

extern constinit const OpType sendrecv_op = communication_type(OpKind::sendrecv, "sendrecv", kImpls);

}  // namespace syntorch::runtime::ops
