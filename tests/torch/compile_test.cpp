// The fusion planner of compiled regions: which ops share a generated kernel, and its bytes.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/compile.hpp"
#include "syntorch/torch/ops.hpp"

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

// ---- regions on a rank ----

RegionOptions graph(std::uint64_t id) {
  RegionOptions o;
  o.graph_id = id;
  o.graph_name = "f";
  return o;
}

std::vector<testing::FakeRank::Launch> fused_launches(const testing::FakeRank& rank) {
  std::vector<testing::FakeRank::Launch> out;
  for (const auto& l : rank.launches) {
    if (l.op.kind == OpKind::fused) out.push_back(l);
  }
  return out;
}

TEST(CompiledRegion, AChainLaunchesOneGeneratedKernelAndFreesAsEagerMode) {
  testing::FakeRank rank;
  runtime::RankGuard on(&rank);
  Tensor x = torch::empty({1024, 1024});
  const std::size_t before = rank.launches.size();
  begin_region(graph(1));
  EXPECT_TRUE(in_region());
  Tensor y = torch::relu(x * 2.0) + 1.0;
  EXPECT_EQ(rank.launches.size(), before);  // held until the region ends
  const RegionStats stats = end_region();
  EXPECT_FALSE(in_region());
  EXPECT_EQ(stats.eager_kernels, 3u);
  EXPECT_EQ(stats.launched_kernels, 1u);
  EXPECT_EQ(stats.graphs, 1u);
  const auto fused = fused_launches(rank);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].name, "triton_poi_fused_mul_relu_add_0");
  EXPECT_EQ(fused[0].op.bytes, 1024u * 1024 * 4);
  EXPECT_EQ(fused[0].op.written_bytes, 1024u * 1024 * 4);
  y = Tensor();
  x = Tensor();
  EXPECT_EQ(rank.bad_frees, 0);
  EXPECT_TRUE(rank.live.empty());  // tensors made in the region free on the rank itself
}

TEST(CompiledRegion, AnUnreportedOpsLaunchesStayAsTheyAreAndKeepWhatTheyReadWritten) {
  // clamp does not report its tensors: its kernel launches as it is, and the mul before it must
  // write its output, which clamp reads, even though the program releases it; the view after it
  // takes none of its launches.
  testing::FakeRank rank;
  runtime::RankGuard on(&rank);
  Tensor a = torch::empty({256, 256});
  begin_region(graph(2));
  Tensor z = torch::clamp(a * 3.0, 0.0, std::nullopt);
  Tensor w = z.view({-1});
  (void)end_region();
  const auto fused = fused_launches(rank);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].op.written_bytes, 256u * 256 * 4);
  EXPECT_EQ(rank.launches.back().name, "aten::clamp");
}

TEST(CompiledRegion, DeviceWorkFlushesWithoutABreakAndSuspendRunsEagerly) {
  testing::FakeRank rank;
  runtime::RankGuard on(&rank);
  Tensor a = torch::empty({64, 64});
  begin_region(graph(3));
  Tensor b = torch::exp(a) * 2.0;
  graph_break("a value read");
  suspend_region("a disabled function");
  EXPECT_FALSE(in_region());
  Tensor c = torch::sigmoid(b);  // eager: launched at once
  EXPECT_EQ(rank.launches.back().op.kind, OpKind::sigmoid);
  resume_region();
  EXPECT_TRUE(in_region());
  Tensor d = torch::tanh(c) + 1.0;
  const RegionStats stats = end_region();
  EXPECT_EQ(stats.graphs, 2u);
  ASSERT_EQ(stats.break_reasons.size(), 2u);
  EXPECT_EQ(stats.break_reasons[1], "a disabled function");
  EXPECT_EQ(fused_launches(rank).size(), 2u);
}

TEST(CompiledRegion, ABackwardOfACompiledGraphFusesToo) {
  testing::FakeRank rank;
  runtime::RankGuard on(&rank);
  Tensor x = torch::empty({128, 128}).requires_grad_();
  begin_region(graph(4));
  Tensor y = torch::sum(torch::sigmoid(torch::tanh(x)));
  (void)end_region();
  const std::size_t forward = fused_launches(rank).size();
  y.backward();
  EXPECT_FALSE(in_backward_region());
  const auto fused = fused_launches(rank);
  ASSERT_GT(fused.size(), forward);
  EXPECT_NE(fused.back().name.find("backward"), std::string::npos) << fused.back().name;
  EXPECT_TRUE(x.grad().defined());
}

TEST(CompiledRegion, RegionsDoNotNestAndNeedAGraph) {
  testing::FakeRank rank;
  runtime::RankGuard on(&rank);
  EXPECT_THROW(begin_region(graph(0)), std::invalid_argument);
  begin_region(graph(5));
  EXPECT_THROW(begin_region(graph(6)), std::logic_error);
  (void)end_region();
  EXPECT_THROW((void)end_region(), std::logic_error);
}

}  // namespace
}  // namespace syntorch::torch::compile
