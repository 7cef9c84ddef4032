// gemm: C[m,n] = A[m,k] B[k,n], tiled onto the device's matrix units (kernels/gemm.cpp).

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"m", "GEMM rows of A and C", &OpDesc::m},
                               {"n", "GEMM columns of B and C", &OpDesc::n},
                               {"k", "GEMM inner dimension", &OpDesc::k}};
}  // namespace

// Shared with bmm: the checks and accounting of a batch of matrix products.
void check_matmul(const OpDesc& op, OpCheck& c) {
  c.need(op.m, "m");
  c.need(op.n, "n");
  c.need(op.k, "k");
  c.fits({op.batch, op.m, op.n}, "batch*m*n");
  c.fits({op.batch, op.m, op.k}, "batch*m*k");
  c.fits({op.batch, op.k, op.n}, "batch*k*n");
  c.fits({op.batch, op.m, op.n, op.k, 2}, "the FLOP count");
}
double matmul_flops(const OpDesc& op) {
  return 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) * static_cast<double>(op.n) *
         static_cast<double>(op.k);
}
double matmul_bytes(const OpDesc& op) {
  const double m = static_cast<double>(op.m), n = static_cast<double>(op.n), k = static_cast<double>(op.k);
  return static_cast<double>(op.batch) * (m * k + k * n + m * n) * element_bytes(op.dtype);
}

extern constinit const OpType gemm_op{
    .kind = OpKind::gemm,
    .name = "gemm",
    .params = kParams,
    .implementations = kMatmulImpls,
    .check = &check_matmul,
    .describe =
        [](const OpDesc& op) { return fmt::format("gemm m={} n={} k={} {}", op.m, op.n, op.k, dtype_name(op.dtype)); },
    .flops = &matmul_flops,
    .min_bytes = &matmul_bytes,
    .lower = &detail::lower_gemm,
};

}  // namespace syntorch::runtime::ops
