// Autograd and optimizers on meta tensors: which backward kernels run, what memory they hold and
// free, and what a training step costs against its forward.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/predictor.hpp"
#include "syntorch/torch/torch.hpp"
#include "syntorch/torch/optim.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;
using torch::testing::FakeRank;
namespace F = torch::nn::functional;

double matmul_flops(const FakeRank& rank, std::size_t from = 0) {
  double flops = 0;
  for (std::size_t i = from; i < rank.launches.size(); ++i) {
    const auto& op = rank.launches[i].op;
    if (op.kind == OpKind::gemm || op.kind == OpKind::bmm) flops += runtime::op_flops(op);
  }
  return flops;
}

TEST(Autograd, LinearBackwardIsTwoGemmsAndABiasSumSkippingWhatNeedsNoGradient) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear linear(torch::nn::LinearOptions(64, 32));
  auto x = torch::empty({8, 64});  // data: no gradient
  auto loss = torch::sum(linear(x));
  EXPECT_TRUE(loss.requires_grad());
  EXPECT_EQ(loss.grad_fn()->name(), "SumBackward0");
  const std::size_t before = rank.launches.size();
  loss.backward();
  std::vector<runtime::OpDesc> gemms;
  bool bias_sum = false;
  for (std::size_t i = before; i < rank.launches.size(); ++i) {
    const auto& op = rank.launches[i].op;
    if (op.kind == OpKind::gemm) gemms.push_back(op);
    if (op.kind == OpKind::sum && op.rows == 32 && op.cols == 8) bias_sum = true;
  }
  // dW = dY^T X only: the input needs no gradient, so dX's GEMM is skipped.
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].m, 32u);
  EXPECT_EQ(gemms[0].n, 64u);
  EXPECT_EQ(gemms[0].k, 8u);
  EXPECT_TRUE(bias_sum);
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_EQ(linear->weight.grad().sizes(), (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(linear->bias.grad().sizes(), (std::vector<std::int64_t>{32}));
}

TEST(Autograd, GradReturnsGradientsWithoutTouchingGradAndRunsOnlyWhatLeadsToTheInputs) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto x = torch::empty({16, 32}).requires_grad_();
  auto w = torch::empty({32, 8}).requires_grad_();
  auto h = torch::matmul(x, w);
  auto loss = torch::sum(torch::tanh(h));
  const std::size_t before = rank.launches.size();
  const auto g = torch::autograd::grad({loss}, {x}, {}, /*retain_graph=*/true);
  ASSERT_EQ(g.size(), 1u);
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].sizes(), x.sizes());
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  // tanh's backward and one GEMM (x's gradient), not w's.
  std::size_t gemms = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) gemms += rank.launches[i].op.kind == OpKind::gemm ? 1 : 0;
  EXPECT_EQ(gemms, 1u);
  // A non-leaf input and a leaf behind it, together.
  const auto both = torch::autograd::grad({loss}, {h, w}, {}, /*retain_graph=*/true);
  EXPECT_EQ(both[0].sizes(), h.sizes());
  EXPECT_EQ(both[1].sizes(), w.sizes());
  // An input the output does not depend on.
  auto unused = torch::empty({4}).requires_grad_();
  EXPECT_THROW((void)torch::autograd::grad({loss}, {unused}, {}, true), torch::Error);
  const auto none = torch::autograd::grad({loss}, {unused}, {}, true, /*allow_unused=*/true);
  EXPECT_FALSE(none[0].defined());
  EXPECT_THROW((void)torch::autograd::grad({loss}, {torch::empty({2})}), torch::Error);  // needs no grad
  // Without retain_graph the graph's saved tensors go, as backward's.
  (void)torch::autograd::grad({loss}, {x});
  EXPECT_THROW(loss.backward(), torch::Error);
}

TEST(Autograd, ATrainingStepDoesThreeTimesTheForwardsMatrixFlops) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear up(torch::nn::LinearOptions(256, 1024)), down(torch::nn::LinearOptions(1024, 256));
  auto x = torch::empty({64, 256}).requires_grad_();  // as inside a model: every layer's input needs dX
  const std::size_t start = rank.launches.size();
  auto y = down(F::gelu(up(x)));
  const double forward = matmul_flops(rank, start);
  const std::size_t mid = rank.launches.size();
  torch::sum(y).backward();
  EXPECT_DOUBLE_EQ(matmul_flops(rank, mid), 2 * forward);  // dX and dW per GEMM
  EXPECT_DOUBLE_EQ(matmul_flops(rank, start), 3 * forward);
  // GELU's backward reads the saved input.
  const auto kinds = rank.kinds();
  EXPECT_NE(std::find(kinds.begin() + static_cast<std::ptrdiff_t>(mid), kinds.end(), OpKind::gelu_backward), kinds.end());
}

TEST(Autograd, SavedActivationsStayAllocatedUntilBackwardFreesThem) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear a(torch::nn::LinearOptions(512, 512)), b(torch::nn::LinearOptions(512, 512));
  const std::uint64_t weights = rank.live_bytes;
  std::uint64_t held;
  {
    auto x = torch::empty({128, 512});
    auto h = F::gelu(a(x));  // a's output is saved by GELU, GELU's by b
    auto loss = torch::sum(b(h));
    x = torch::Tensor();
    h = torch::Tensor();
    held = rank.live_bytes - weights;
    // x (saved by a), a's output (saved by GELU) and GELU's output (saved by b) stay.
    EXPECT_GE(held, 3u * 128 * 512 * 4);
    loss.backward();
  }
  // Only the parameters' gradients remain, filed under gradients.
  EXPECT_EQ(rank.live_bytes - weights, rank.bytes_for(os::MemoryUse::gradients));
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::gradients), 2u * (512 * 512 + 512) * 4);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::activations), 0u);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardsUntilZeroGradDropsThem) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear layer(torch::nn::LinearOptions(64, 64));
  torch::optim::SGD opt(layer->parameters(), torch::optim::SGDOptions(0.1));
  torch::sum(layer(torch::empty({4, 64}))).backward();
  const std::uint64_t grads = rank.bytes_for(os::MemoryUse::gradients);
  EXPECT_EQ(grads, (64u * 64 + 64) * 4);
  const std::size_t before = rank.launches.size();
  torch::sum(layer(torch::empty({4, 64}))).backward();  // a second micro-batch
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::gradients), grads);
  int adds = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) adds += rank.launches[i].name == "aten::add_";
  EXPECT_EQ(adds, 2);  // weight and bias, in place
  opt.zero_grad();
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::gradients), 0u);
  EXPECT_FALSE(layer->weight.grad().defined());
}

TEST(Autograd, ALeafsGradientIsAccumulatedAsSoonAsItIsComplete) {
  // As in PyTorch (AccumulateGrad runs first among ready nodes), even when an earlier graph, still
  // alive, made the accumulator: the last layer's weight gradient is in .grad before the first
  // layer's backward GEMMs run, so hooks (DDP buckets) can start under the rest of the backward.
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear first(torch::nn::LinearOptions(64, 64)), last(torch::nn::LinearOptions(64, 64));
  std::size_t at_hook = 0;
  last->weight.register_post_accumulate_grad_hook([&](torch::Tensor&) { at_hook = rank.launches.size(); });
  auto x = torch::empty({4, 64}).requires_grad_();
  auto earlier = torch::sum(last(first(x)));  // a micro-batch whose backward comes later (1F1B warm-up)
  auto loss = torch::sum(last(first(x)));
  loss.backward();
  std::size_t gemms_after = 0;
  for (std::size_t i = at_hook; i < rank.launches.size(); ++i) gemms_after += rank.launches[i].op.kind == OpKind::gemm;
  EXPECT_GT(at_hook, 0u);
  EXPECT_EQ(gemms_after, 2u);  // the first layer's dX and dW
  (void)earlier;
}

TEST(Autograd, NoGradRecordsNothingAndInPlaceOnALeafIsRefused) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({8, 8}).requires_grad_();
  {
    torch::NoGradGuard no_grad;
    auto y = torch::matmul(torch::empty({2, 8}), w);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    w.add_(1.0);  // an optimizer's update
  }
  EXPECT_THROW(w.add_(1.0), torch::Error);
  EXPECT_THROW(torch::sum(torch::empty({2, 2})).backward(), torch::Error);  // nothing requires grad
}

TEST(Autograd, AFactorysRequiresGradOptionMakesALeafThatRequiresGrad) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  const auto options = torch::TensorOptions().dtype(torch::kFloat16).requires_grad(true);
  EXPECT_TRUE(options.requires_grad());
  EXPECT_FALSE(options.requires_grad(false).requires_grad());
  auto w = torch::randn({8, 8}, options);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.grad_fn(), nullptr);  // a leaf
  auto loss = torch::sum(torch::matmul(torch::empty({2, 8}, torch::kFloat16), w));
  EXPECT_TRUE(loss.requires_grad());
  loss.backward();
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat16)).requires_grad());
}

TEST(Autograd, BackwardTwiceNeedsRetainGraph) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({8, 8}).requires_grad_();
  auto loss = torch::sum(torch::softmax(torch::matmul(torch::empty({2, 8}), w), -1));
  loss.backward(torch::Tensor(), true);
  loss.backward();
  EXPECT_THROW(loss.backward(), torch::Error);
}

TEST(Autograd, AttentionBackwardIsFlashAttentionsBackwardAtTwoAndAHalfTimesTheForward) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto q = torch::empty({2, 8, 256, 64}, torch::kFloat16).requires_grad_();
  auto out = torch::scaled_dot_product_attention(q, q, q, {}, 0.0, true);
  const runtime::OpDesc forward = rank.last();
  torch::sum(out).backward();
  bool found = false;
  for (const auto& l : rank.launches) {
    if (l.op.kind != OpKind::attention_backward) continue;
    found = true;
    EXPECT_DOUBLE_EQ(runtime::op_flops(l.op), 2.5 * runtime::op_flops(forward));
    EXPECT_TRUE(l.op.causal);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(q.grad().sizes(), q.sizes());
}

TEST(Autograd, ADeepGraphIsFreedWithoutRecursion) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({4}).requires_grad_();
  auto h = w * 1.0;
  for (int i = 0; i < 100000; ++i) h = h + 1.0;
  h = torch::Tensor();  // the whole chain goes at once
  auto g = w * 2.0;
  for (int i = 0; i < 100000; ++i) g = g * 1.0;
  const std::size_t before = rank.launches.size();
  torch::sum(g).backward();
  EXPECT_TRUE(w.grad().defined());
  // Every one of the chain's nodes ran its backward: one multiply each.
  std::size_t muls = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) muls += rank.launches[i].op.kind == OpKind::mul;
  EXPECT_GE(muls, 100001u);
}

// An in-place op's history is the tensor's, not the handle's: every handle on it sees it (as in
// PyTorch, where they share one TensorImpl). Overwriting a tensor with values that need no
// gradient cuts what it held from the graph, and it still requires grad.
TEST(Autograd, InPlaceHistoryIsEveryHandlesAndCopyingOverItCutsTheOldOne) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({4}).requires_grad_();
  auto buf = torch::zeros({4});
  const torch::Tensor other = buf;  // a second handle, taken before the in-place op
  buf.add_(w);
  ASSERT_TRUE(other.requires_grad());
  torch::sum(other).backward();
  EXPECT_TRUE(w.grad().defined());

  auto v = torch::empty({4}).requires_grad_();
  auto y = v * 2.0;
  y.copy_(torch::zeros({4}));
  EXPECT_TRUE(y.requires_grad());
  torch::sum(y).backward();
  EXPECT_FALSE(v.grad().defined()) << "v's values were overwritten: nothing flows back to it";
}

// Backward again without retain_graph works through nodes that saved nothing (PyTorch raises only
// when a freed saved tensor would be read), and fails where one was freed.
TEST(Autograd, ASecondBackwardWorksWhereNothingSavedWasFreed) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({8}).requires_grad_();
  auto y = torch::sum(w * 2.0);
  y.backward();
  y.backward();
  EXPECT_TRUE(w.grad().defined());
  auto z = torch::sum(torch::exp(w));  // exp saves its output
  z.backward();
  EXPECT_THROW(z.backward(), torch::Error);
}

// s / x is reciprocal(x) * s, as PyTorch computes it, and its backward reads the saved reciprocal.
TEST(Autograd, AScalarOverATensorIsAReciprocalTimesTheScalar) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto x = torch::empty({1024}).requires_grad_();
  auto y = 2.0 / x;
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");
  ASSERT_EQ(y.grad_fn()->next_edges.size(), 1u);
  EXPECT_EQ(y.grad_fn()->next_edges[0].fn->name(), "ReciprocalBackward0");
  const std::size_t before = rank.launches.size();
  torch::sum(y).backward();
  std::size_t muls = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) muls += rank.launches[i].op.kind == OpKind::mul;
  EXPECT_GE(muls, 3u) << "the scalar's multiply, then y^2 and dy * y^2";
  EXPECT_TRUE(x.grad().defined());
}

TEST(Optim, AdamKeepsEightBytesOfStatePerFp32ParameterAndFusedIsOneKernel) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear layer(torch::nn::LinearOptions(128, 128));
  const std::int64_t params = 128 * 128 + 128;
  torch::optim::AdamW foreach(layer->parameters());
  torch::sum(layer(torch::empty({4, 128}))).backward();
  std::size_t before = rank.launches.size();
  foreach.step();
  EXPECT_EQ(foreach.state_bytes(), static_cast<std::uint64_t>(8 * params));
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::optimizer_state), static_cast<std::uint64_t>(8 * params));
  int foreach_ops = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) foreach_ops += rank.launches[i].op.kind == OpKind::foreach;
  EXPECT_EQ(foreach_ops, 8);  // decay, two moments (three ops), the denominator (three), the update
  torch::optim::Adam fused(layer->parameters(), torch::optim::AdamOptions().fused(true));
  before = rank.launches.size();
  fused.step();
  int adam = 0, others = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) {
    (rank.launches[i].op.kind == OpKind::adam ? adam : others) += 1;
  }
  EXPECT_EQ(adam, 1);
  EXPECT_EQ(others, 4);  // both moments of both tensors zeroed at the first step
  EXPECT_EQ(rank.launches.back().op.elements, static_cast<std::uint64_t>(params));
  EXPECT_EQ(rank.launches.back().op.batch, 2u);
}

// A parameter without a gradient (frozen, or unused this step) gets no state and no work; the
// step's multi-tensor ops run once per dtype, as PyTorch groups tensors by device and dtype.
TEST(Optim, StateIsMadeForParametersWithAGradientAndEachDtypeIsItsOwnLaunch) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto w = torch::empty({256, 256}).requires_grad_();
  auto frozen = torch::empty({1024, 1024});  // requires no grad: accepted, never stepped
  auto h = torch::empty({64}, torch::kBFloat16).requires_grad_();
  torch::optim::AdamW opt({w, frozen, h});
  torch::sum(torch::matmul(torch::empty({4, 256}), w)).backward();
  torch::sum(h * 2.0).backward();
  std::size_t before = rank.launches.size();
  opt.step();
  EXPECT_EQ(opt.state_bytes(), static_cast<std::uint64_t>(2 * (256 * 256 * 4 + 64 * 2)));
  int foreach_ops = 0;
  std::uint64_t elements = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) {
    if (rank.launches[i].op.kind != OpKind::foreach) continue;
    ++foreach_ops;
    elements += rank.launches[i].op.elements;
  }
  EXPECT_EQ(foreach_ops, 2 * 8) << "each of AdamW's eight foreach ops once per dtype";
  EXPECT_EQ(elements, 8u * (256 * 256 + 64));
  // The fused step: one kernel per dtype.
  torch::optim::Adam fused({w, frozen, h}, torch::optim::AdamOptions().fused(true));
  before = rank.launches.size();
  fused.step();
  int adam = 0;
  for (std::size_t i = before; i < rank.launches.size(); ++i) adam += rank.launches[i].op.kind == OpKind::adam;
  EXPECT_EQ(adam, 2);
}

TEST(Optim, TheForeachAdamStepTakesLongerThanTheFusedOneOnTheSameDevice) {
  const hw::Machine m = hw::Machine::load(std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/a100_sxm4_80gb.json");
  runtime::Predictor predictor(m, {});
  runtime::OpDesc fused;
  fused.kind = OpKind::adam;
  fused.dtype = DType::fp32;
  fused.elements = 100'000'000;
  fused.batch = 200;
  runtime::OpDesc pass = fused;
  pass.kind = OpKind::foreach;
  double foreach_s = 0;
  for (std::uint64_t inputs : {1, 2, 1, 2, 1, 1, 1, 3}) {
    pass.k = inputs;
    foreach_s += predictor.predict(pass).time_s;
  }
  const double fused_s = predictor.predict(fused).time_s;
  // Eight passes reading 12 and writing 8 lists against one reading 4 and writing 3.
  EXPECT_GT(foreach_s / fused_s, 2.5);
  EXPECT_LT(foreach_s / fused_s, 3.5);
  // The same from the steps themselves: what torch::optim's foreach and fused AdamW launch for
  // 200 fp32 parameters of 500,000 elements, predicted on the same device.
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 200; ++i) {
    params.push_back(torch::empty({500'000}).requires_grad_());
    params.back().mutable_grad() = torch::empty({500'000});
  }
  auto step_s = [&](torch::optim::Optimizer& opt) {
    opt.step();  // the first step makes the state
    const std::size_t before = rank.launches.size();
    opt.step();
    double s = 0;
    for (std::size_t i = before; i < rank.launches.size(); ++i) s += predictor.predict(rank.launches[i].op).time_s;
    return s;
  };
  torch::optim::AdamW by_foreach(params);
  torch::optim::AdamW by_fused(params, torch::optim::AdamOptions().fused(true));
  const double ratio = step_s(by_foreach) / step_s(by_fused);
  EXPECT_GT(ratio, 2.5);
  EXPECT_LT(ratio, 3.5);
}

TEST(Loss, CrossEntropyIsLogSoftmaxAndNllLossWithTheirBackward) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  auto logits = torch::empty({16, 1000}).requires_grad_();
  auto loss = F::cross_entropy(logits, torch::empty({16}, torch::kInt64));
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_EQ(loss.grad_fn()->name(), "NllLossBackward0");
  loss.backward();
  const auto kinds = rank.kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), OpKind::softmax_backward), kinds.end());
  EXPECT_EQ(logits.grad().sizes(), logits.sizes());
}

}  // namespace
