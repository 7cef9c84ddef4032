// log: the natural logarithm per element in fp32 (about 4 operations), one input.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType log_op = elementwise_type<detail::ElementwiseCost{4, 1}>(OpKind::log, "log");

}  // namespace syntorch::runtime::ops
