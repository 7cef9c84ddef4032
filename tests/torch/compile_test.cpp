// The fusion planner of compiled regions: which ops share a generated kernel, and its bytes.

#include <gtest/gtest.h>

#include "syntorch/torch/compile.hpp"

namespace syntorch::torch::compile {
namespace {

using runtime::OpDesc;
using runtime::OpKind;

constexpr std::uint64_t kN = 1 << 20;  // elements of each fp32 tensor below

OpDesc kernel(OpKind kind, std::uint64_t elements = kN) {
  OpDesc op;
  op.kind = kind;
  op.dtype = DType::fp32;
  op.elements = elements;
  op.rows = elements / 1024;
  op.cols = 1024;
  op.m = op.n = op.k = 1024;
  return op;
}

BufferUse use(std::uint32_t buffer, std::uint64_t elements = kN) { return {buffer, 0, elements * 4, elements}; }

RecordedOp op(std::string name, OpKind kind, std::vector<BufferUse> reads, std::vector<BufferUse> writes) {
  RecordedOp r;
  r.name = std::move(name);
  r.kernels = {kernel(kind)};
  r.kernel_names = {"aten::" + r.name};
  r.reads = std::move(reads);
  r.writes = std::move(writes);
  return r;
}

TEST(FusionPlan, APointwiseChainIsOneKernelReadingItsInputsAndWritingItsLiveOutputOnce) {
  // y = relu(x * w + b): buffers 0 (x), 1 (w), 2 (b) were there before; 3 and 4 are intermediates
  // the program dropped; 5 is the result it holds.
  const std::vector<RecordedOp> ops = {op("mul", OpKind::mul, {use(0), use(1)}, {use(3)}),
                                       op("add", OpKind::add, {use(3), use(2, 1024)}, {use(4)}),
                                       op("relu", OpKind::relu, {use(4)}, {use(5)})};
  std::vector<BufferState> buffers(6);
  buffers[3] = buffers[4] = {true, true};
  buffers[5] = {true, false};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_TRUE(plan[0].generated);
  EXPECT_EQ(plan[0].fused_ops, 3u);
  EXPECT_EQ(plan[0].name, "triton_poi_fused_mul_add_relu_0");
  EXPECT_EQ(plan[0].op.kind, OpKind::fused);
  EXPECT_EQ(plan[0].op.bytes, (2 * kN + 1024) * 4);  // x, w and the broadcast bias, once each
  EXPECT_EQ(plan[0].op.written_bytes, kN * 4);       // only the result
  EXPECT_EQ(plan[0].op.elements, kN);
  EXPECT_EQ(index, 1u);
}

TEST(FusionPlan, AnIntermediateSomethingStillHoldsIsWrittenOut) {
  // The same chain with the intermediate kept (autograd saved it, or the program holds it).
  const std::vector<RecordedOp> ops = {op("mul", OpKind::mul, {use(0), use(1)}, {use(2)}),
                                       op("relu", OpKind::relu, {use(2)}, {use(3)})};
  std::vector<BufferState> buffers(4);
  buffers[2] = {true, false};
  buffers[3] = {true, false};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].op.written_bytes, 2 * kN * 4);
}

TEST(FusionPlan, MatrixProductsStayLibraryCallsAndSplitTheChains) {
  // gelu(x @ w1) @ w2 + r: the matmuls as eager launches them; the gelu reads the first's output.
  const std::vector<RecordedOp> ops = {op("mm", OpKind::gemm, {use(0), use(1)}, {use(2)}),
                                       op("gelu", OpKind::gelu, {use(2)}, {use(3)}),
                                       op("mm", OpKind::gemm, {use(3), use(4)}, {use(5)}),
                                       op("add", OpKind::add, {use(5), use(6)}, {use(7)})};
  std::vector<BufferState> buffers(8, BufferState{true, true});
  buffers[0] = buffers[1] = buffers[4] = buffers[6] = {};
  buffers[7] = {true, false};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_FALSE(plan[0].generated);
  EXPECT_EQ(plan[0].op.kind, OpKind::gemm);
  EXPECT_EQ(plan[0].name, "aten::mm");
  EXPECT_TRUE(plan[1].generated);
  EXPECT_EQ(plan[1].op.written_bytes, kN * 4);  // the second matmul reads it: written out
  EXPECT_EQ(plan[3].name, "triton_poi_fused_add_1");
}

TEST(FusionPlan, OneReductionPerKernelWithItsPointwiseEpilogue) {
  // softmax(x) * m, then a sum: the softmax and the mul share a kernel, the sum starts another.
  const std::vector<RecordedOp> ops = {op("softmax", OpKind::softmax, {use(0)}, {use(1)}),
                                       op("mul", OpKind::mul, {use(1), use(2)}, {use(3)}),
                                       op("sum", OpKind::sum, {use(3)}, {use(4, 1)})};
  std::vector<BufferState> buffers(5, BufferState{true, true});
  buffers[0] = buffers[2] = {};
  buffers[4] = {true, false};
  std::uint32_t index = 3;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].name, "triton_red_fused_softmax_mul_3");
  EXPECT_EQ(plan[0].op.written_bytes, kN * 4);  // the sum, in the next kernel, reads it
  EXPECT_EQ(plan[1].name, "triton_red_fused_sum_4");
  EXPECT_EQ(plan[1].op.bytes, kN * 4);
  EXPECT_EQ(plan[1].op.written_bytes, 4u);
}

TEST(FusionPlan, UnrelatedChainsAreSeparateKernelsAndViewsLaunchNothing) {
  RecordedOp view;
  view.name = "view";
  view.reads = {use(0)};
  view.writes = {use(0)};
  const std::vector<RecordedOp> ops = {op("relu", OpKind::relu, {use(0)}, {use(1)}), view,
                                       op("exp", OpKind::exp, {use(2)}, {use(3)})};
  std::vector<BufferState> buffers(4, BufferState{true, false});
  buffers[0] = buffers[2] = {};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].name, "triton_poi_fused_relu_0");
  EXPECT_EQ(plan[1].name, "triton_poi_fused_exp_1");
}

TEST(FusionPlan, WithoutFusionEveryKernelIsEagerModes) {
  const std::vector<RecordedOp> ops = {op("mul", OpKind::mul, {use(0), use(1)}, {use(2)}),
                                       op("relu", OpKind::relu, {use(2)}, {use(3)})};
  std::vector<BufferState> buffers(4);
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index, FusionOptions{0});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_FALSE(plan[0].generated);
  EXPECT_EQ(plan[1].op.kind, OpKind::relu);
}

TEST(FusionPlan, ACapLimitsTheOpsOfOneKernel) {
  std::vector<RecordedOp> ops;
  for (std::uint32_t i = 0; i < 5; ++i) ops.push_back(op("add", OpKind::add, {use(i)}, {use(i + 1)}));
  std::vector<BufferState> buffers(6, BufferState{true, true});
  std::uint32_t index = 0;
  EXPECT_EQ(plan_fusion(ops, buffers, index, FusionOptions{2}).size(), 3u);
}

TEST(FusionPlan, AnOutputAnOpaqueOpMayHaveReadIsWrittenOut) {
  // relu's output is released after an opaque launch (an op that did not report its tensors) ran:
  // that launch may have read it. exp's output is released before the opaque launch.
  RecordedOp opaque;
  opaque.name = "";
  opaque.kernels = {kernel(OpKind::copy)};
  opaque.opaque = true;
  const std::vector<RecordedOp> ops = {op("relu", OpKind::relu, {use(0)}, {use(1)}), opaque,
                                       op("exp", OpKind::exp, {use(2)}, {use(3)})};
  std::vector<BufferState> buffers(4);
  buffers[1] = {true, true, 1};
  buffers[3] = {true, true, 3};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].op.written_bytes, kN * 4);
  EXPECT_EQ(plan[1].op.kind, OpKind::copy);  // as it was
  EXPECT_EQ(plan[2].op.written_bytes, 0u);
}

TEST(FusionPlan, LibraryOpsStayAsTheyAreAndTheirReadsKeepOutputs) {
  RecordedOp accumulate = op("accumulate_grad", OpKind::add, {use(1)}, {});
  accumulate.library = true;
  const std::vector<RecordedOp> ops = {op("mul", OpKind::mul, {use(0)}, {use(1)}), accumulate};
  std::vector<BufferState> buffers(2);
  buffers[1] = {true, true, 2};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_TRUE(plan[0].generated);
  EXPECT_EQ(plan[0].op.written_bytes, kN * 4);
  EXPECT_EQ(plan[1].name, "aten::accumulate_grad");
}

TEST(FusionPlan, GathersStayLibraryCallsAndABroadcastReadCountsOnce) {
  EXPECT_EQ(fusion_role(OpKind::embedding), FusionRole::library);
  // x + x[None] (a broadcast view of the same memory): x is read once.
  const std::vector<RecordedOp> ops = {op("add", OpKind::add, {use(0), use(0, 1024)}, {use(1)})};
  std::vector<BufferState> buffers(2);
  buffers[1] = {true, false};
  std::uint32_t index = 0;
  const auto plan = plan_fusion(ops, buffers, index);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].op.bytes, kN * 4);
}

TEST(FusionPlan, RolesFollowTheKernelKinds) {
  EXPECT_EQ(fusion_role(OpKind::gemm), FusionRole::library);
  EXPECT_EQ(fusion_role(OpKind::attention), FusionRole::library);
  EXPECT_EQ(fusion_role(OpKind::allreduce), FusionRole::library);
  EXPECT_EQ(fusion_role(OpKind::gelu), FusionRole::pointwise);
  EXPECT_EQ(fusion_role(OpKind::layernorm), FusionRole::reduction);
}

}  // namespace
}  // namespace syntorch::torch::compile
