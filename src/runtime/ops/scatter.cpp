// scatter: dest[index[i]] = src[i] along a dim (scatter_, scatter_add_), over the index's elements.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType scatter_op = indexed_type(OpKind::scatter, "scatter");

}  // namespace syntorch::runtime::ops
