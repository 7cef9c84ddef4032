// Matrix products: mm, bmm, addmm (the bias read in the GEMM's epilogue), baddbmm.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace product_ops {

Lowered mm(const Call& c) { return std::vector{torch::mm(c.tensor("self"), c.tensor("mat2"))}; }
Lowered bmm(const Call& c) { return std::vector{torch::bmm(c.tensor("self"), c.tensor("mat2"))}; }
Lowered addmm(const Call& c) {
  return std::vector{torch::addmm(c.tensor("self"), c.tensor("mat1"), c.tensor("mat2"))};
}
// The added input is read in the GEMM's epilogue.
Lowered baddbmm(const Call& c) { return std::vector{torch::bmm(c.tensor("batch1"), c.tensor("batch2"))}; }

Lowered linear(const Call& c) {
  return std::vector{torch::nn::functional::linear(c.tensor("input"), c.tensor("weight"), c.optional_tensor("bias"))};
}
Lowered matmul(const Call& c) { return std::vector{torch::matmul(c.tensor("self"), c.tensor("other"))}; }

constexpr Lowering kTable[] = {
    {"linear", "input weight bias", linear},
    {"matmul", "self other", matmul},
    {"mm", "self mat2", mm},
    {"bmm", "self mat2", bmm},
    {"addmm", "self mat1 mat2", addmm},
    {"baddbmm", "self batch1 batch2", baddbmm},
};

}  // namespace product_ops

std::span<const Lowering> products() { return product_ops::kTable; }

}  // namespace syntorch::graph::lowerings
