// bmm: a batch of independent matrix products, one grid over all of them (kernels/gemm.cpp).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"batch", "batch size", &OpDesc::batch},
                               {"m", "GEMM rows of A and C", &OpDesc::m},
                               {"n", "GEMM columns of B and C", &OpDesc::n},
                               {"k", "GEMM inner dimension", &OpDesc::k}};
}  // namespace

extern constinit const OpType bmm_op{
    .kind = OpKind::bmm,
    .name = "bmm",
    .params = kParams,
    .implementations = kMatmulImpls,
    .check = [](const OpDesc& op, OpCheck& c) {
      c.need(op.batch, "batch");
      check_matmul(op, c);
    },
    .describe =
        [](const OpDesc& op) {
          return fmt::format("bmm batch={} m={} n={} k={} {}", op.batch, op.m, op.n, op.k, dtype_name(op.dtype));
        },
    .flops = &matmul_flops,
    .min_bytes = &matmul_bytes,
    .lower = &detail::lower_gemm,
};

}  // namespace syntorch::runtime::ops
