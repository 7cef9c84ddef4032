// grouped_gemm: one kernel over `groups` independent products C_g[m_g, n] = A_g[m_g, k] B_g[k, n]
// with the rows m_g of each group summing to m (the experts of a mixture-of-experts layer, each
// with the tokens routed to it: CUTLASS's grouped GEMM, Megatron's grouped_gemm, TensorRT-LLM's
// MoE GEMMs). An uneven split (load imbalance) comes as OpDesc::splits; without one the rows
// split evenly (kernels/gemm.cpp).

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"groups", "grouped GEMM groups (experts)", &OpDesc::batch, nullptr, 1 << 16},
                               {"m", "GEMM rows of A and C (all groups)", &OpDesc::m},
                               {"n", "GEMM columns of B and C", &OpDesc::n},
                               {"k", "GEMM inner dimension", &OpDesc::k}};
constexpr std::string_view kImpls[] = {"auto", "tiled", "gemv"};
}  // namespace

extern constinit const OpType grouped_gemm_op{
    .kind = OpKind::grouped_gemm,
    .name = "grouped_gemm",
    .params = kParams,
    .implementations = kImpls,
    .splits_help = "the rows of each group, summing to m",
    .check =
        [](const OpDesc& op, OpCheck& c) {
          c.need(op.batch, "groups");
          c.need(op.m, "m");
          c.need(op.n, "n");
          c.need(op.k, "k");
          c.fits({op.m, op.n}, "m*n");
          c.fits({op.m, op.k}, "m*k");
          c.fits({op.batch, op.k, op.n}, "groups*k*n");
          c.fits({op.m, op.n, op.k, 2}, "the FLOP count");
          if (!op.splits.empty()) {
            const std::uint64_t sum = std::accumulate(op.splits.begin(), op.splits.end(), std::uint64_t{0});
            if (op.splits.size() != op.batch || sum != op.m) {
              c.error(fmt::format("grouped_gemm: {} group sizes summing to {}, expected {} summing to m = {}",
                                  op.splits.size(), sum, op.batch, op.m));
            }
          }
        },
    .describe =
        [](const OpDesc& op) {
          std::string split;
          if (!op.splits.empty()) {
            const auto [lo, hi] = std::minmax_element(op.splits.begin(), op.splits.end());
            split = fmt::format(" rows/group {}..{}", *lo, *hi);
          }
          return fmt::format("grouped_gemm groups={} m={} n={} k={}{} {}", op.batch, op.m, op.n, op.k, split,
                             dtype_name(op.dtype));
        },
    .flops =
        [](const OpDesc& op) {
          return 2.0 * static_cast<double>(op.m) * static_cast<double>(op.n) * static_cast<double>(op.k);
        },
    // Every group's weights read once (groups without rows skip theirs), A read, C written.
    .min_bytes =
        [](const OpDesc& op) {
          std::uint64_t used = 0;
          for (std::uint64_t rows : split_sizes(op.m, op.batch, op.splits)) used += rows > 0 ? 1 : 0;
          const double m = static_cast<double>(op.m), n = static_cast<double>(op.n), k = static_cast<double>(op.k);
          return (m * k + static_cast<double>(used) * k * n + m * n) * element_bytes(op.dtype);
        },
    .lower = &detail::lower_grouped_gemm,
};

}  // namespace syntorch::runtime::ops
