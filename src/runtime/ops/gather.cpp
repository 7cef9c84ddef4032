// gather: out[i] = src[index[i]] along a dim (torch.gather, take_along_dim), over the index's
// elements.

#include "op_type.hpp"

namespace syntorch::runtime::ops {

extern constinit const OpType gather_op = indexed_type(OpKind::gather, "gather");

}  // namespace syntorch::runtime::ops
