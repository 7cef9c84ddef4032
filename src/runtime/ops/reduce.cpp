// reduce: every rank's `bytes` summed on the root (collectives/chain.cpp).

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "ring"};
}  // namespace

extern constinit const OpType reduce_op = communication_type(OpKind::reduce, "reduce", kImpls);

}  // namespace syntorch::runtime::ops
