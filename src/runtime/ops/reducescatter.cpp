// reducescatter: every rank ends with its share of the elementwise sum; `bytes` is the full buffer
// (collectives/ring.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring"};
}  // namespace

extern constinit const OpType reducescatter_op = communication_type(OpKind::reducescatter, "reducescatter", kImpls);

}  // namespace syntorch::runtime::ops
