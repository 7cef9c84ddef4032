// Automatic mixed precision: autocast's casts (which ops, once per weight, the backward's dtypes),
// the GradScaler's kernels and syncs, and clip_grad_norm_.

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;
using torch::testing::FakeRank;
namespace F = torch::nn::functional;

std::size_t count(const FakeRank& rank, OpKind kind, std::size_t from = 0) {
  return static_cast<std::size_t>(std::count_if(rank.launches.begin() + static_cast<std::ptrdiff_t>(from),
                                                rank.launches.end(),
                                                [&](const FakeRank::Launch& l) { return l.op.kind == kind; }));
}

TEST(Autocast, LinearCastsItsInputsAndEachWeightOncePerRegion) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear linear(torch::nn::LinearOptions(64, 32));  // fp32 parameters
  const auto x = torch::empty({8, 64});
  rank.launches.clear();
  {
    torch::autocast::AutocastMode autocast(torch::kBFloat16);
    const auto y = linear(x);
    EXPECT_EQ(y.dtype(), torch::kBFloat16);
    // x, the weight and the bias cast, then a bf16 GEMM.
    ASSERT_EQ(rank.launches.size(), 4u);
    EXPECT_EQ(count(rank, OpKind::copy), 3u);
    EXPECT_EQ(rank.launches[3].op.kind, OpKind::gemm);
    EXPECT_EQ(rank.launches[3].op.dtype, DType::bf16);
    // Again in the same region: the weight's and bias's casts come from the cache.
    const std::size_t before = rank.launches.size();
    (void)linear(x);
    EXPECT_EQ(count(rank, OpKind::copy, before), 1u);
  }
  // A new region casts the weights again; outside one, nothing is cast.
  std::size_t before = rank.launches.size();
  {
    torch::autocast::AutocastMode autocast(torch::kFloat16);
    EXPECT_EQ(linear(x).dtype(), torch::kFloat16);
  }
  EXPECT_EQ(count(rank, OpKind::copy, before), 3u);
  before = rank.launches.size();
  EXPECT_EQ(linear(x).dtype(), torch::kFloat32);
  EXPECT_EQ(count(rank, OpKind::copy, before), 0u);
  EXPECT_FALSE(torch::autocast::is_autocast_enabled());
}

TEST(Autocast, InferenceUnderNoGradCastsEachWeightOncePerRegionAndGradModeRecastsWithHistory) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear linear(torch::nn::LinearOptions(64, 64).bias(false));
  const auto x = torch::empty({1, 64});
  torch::autocast::AutocastMode autocast(torch::kBFloat16);
  {
    torch::NoGradGuard no_grad;
    rank.launches.clear();
    for (int step = 0; step < 4; ++step) (void)linear(x);  // a decode loop
    EXPECT_EQ(count(rank, OpKind::copy), 5u);             // the weight once, the input each step
  }
  // With grad mode on, the history-less cast is made again (with a backward) and replaces it.
  rank.launches.clear();
  auto y = linear(x);
  EXPECT_EQ(count(rank, OpKind::copy), 2u);
  torch::sum(y).backward();
  EXPECT_TRUE(linear->weight.grad().defined());
}

TEST(Autocast, Fp32ListOpsRunInFp32AndOthersPromote) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::autocast::AutocastMode autocast(torch::kBFloat16);
  const auto h = torch::empty({16, 128}, torch::kBFloat16);
  // layer_norm: its input cast to fp32 first, the norm in fp32.
  rank.launches.clear();
  const auto n = torch::layer_norm(h, {128});
  EXPECT_EQ(n.dtype(), torch::kFloat32);
  ASSERT_EQ(rank.launches.size(), 2u);
  EXPECT_EQ(rank.launches[0].op.kind, OpKind::copy);
  EXPECT_EQ(rank.launches[1].op.dtype, DType::fp32);
  // softmax and log_softmax write fp32 from the bf16 input: one kernel, no cast.
  rank.launches.clear();
  EXPECT_EQ(torch::softmax(h, -1).dtype(), torch::kFloat32);
  EXPECT_EQ(torch::log_softmax(h, -1).dtype(), torch::kFloat32);
  EXPECT_EQ(torch::sum(h).dtype(), torch::kFloat32);
  EXPECT_EQ(rank.launches.size(), 3u);
  // An explicit dtype wins.
  EXPECT_EQ(torch::softmax(h, -1, torch::kBFloat16).dtype(), torch::kBFloat16);
  // Not listed: the inputs' own or promoted dtype (a residual add of a bf16 output to fp32).
  EXPECT_EQ(torch::gelu(h).dtype(), torch::kBFloat16);
  EXPECT_EQ((n + h).dtype(), torch::kFloat32);
  // Attention casts q, k and v.
  const auto q = torch::empty({2, 4, 16, 32});
  EXPECT_EQ(torch::scaled_dot_product_attention(q, q, q, {}, 0.0, true).dtype(), torch::kBFloat16);
  EXPECT_THROW(torch::autocast::set_autocast_dtype(torch::kFloat64), torch::Error);
  // float32, as PyTorch's CUDA autocast takes it: the listed ops stay in float32.
  {
    torch::autocast::AutocastMode fp32(torch::kFloat32);
    EXPECT_EQ(torch::matmul(h, torch::empty({128, 64})).dtype(), torch::kFloat32);  // bf16 input cast up
  }
}

TEST(Autocast, Fp32ParametersGetFp32GradientsFromBf16Gemms) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear fc1(torch::nn::LinearOptions(64, 256)), fc2(torch::nn::LinearOptions(256, 10));
  const auto x = torch::empty({32, 64});
  const auto target = torch::empty({32}, torch::kInt64);
  torch::Tensor loss;
  {
    torch::autocast::AutocastMode autocast(torch::kBFloat16);
    loss = F::cross_entropy(fc2(torch::gelu(fc1(x))), target);
  }
  EXPECT_EQ(loss.dtype(), torch::kFloat32);  // log_softmax and nll_loss on autocast's fp32 list
  const std::size_t before = rank.launches.size();
  loss.backward();
  for (std::size_t i = before; i < rank.launches.size(); ++i) {
    const auto& op = rank.launches[i].op;
    if (op.kind == OpKind::gemm) {
      EXPECT_EQ(op.dtype, DType::bf16) << rank.launches[i].name;
    }
  }
  for (const auto* p : {&fc1->weight, &fc1->bias, &fc2->weight, &fc2->bias}) {
    ASSERT_TRUE(p->grad().defined());
    EXPECT_EQ(p->grad().dtype(), torch::kFloat32);
  }
  // The bf16 weight casts were saved by the GEMMs and are freed with the graph: after backward
  // only the parameters, their gradients and the loss remain.
  EXPECT_EQ(rank.by_use[static_cast<std::size_t>(os::MemoryUse::gradients)],
            rank.by_use[static_cast<std::size_t>(os::MemoryUse::weights)]);
}

// One fp16 training step with loss scaling; `fused` picks the optimizer's kernel.
struct ScaledStep {
  FakeRank rank;
  runtime::RankGuard guard{&rank};
  torch::nn::Linear fc{torch::nn::LinearOptions(64, 64)};
  torch::amp::GradScaler scaler;

  void run(torch::optim::Optimizer& optimizer, bool clip = false) {
    torch::Tensor loss;
    {
      torch::autocast::AutocastMode autocast(torch::kFloat16);
      loss = torch::mean(fc(torch::empty({8, 64})));
    }
    scaler.scale(loss).backward();
    if (clip) {
      scaler.unscale_(optimizer);
      (void)torch::nn::utils::clip_grad_norm_(optimizer.parameters(), 1.0);
    }
    scaler.step(optimizer);
    scaler.update();
  }
};

TEST(GradScaler, AnUnfusedStepReadsTheInfFlagOnTheHost) {
  ScaledStep s;
  torch::optim::AdamW adam(s.fc->parameters(), torch::optim::AdamOptions().foreach(true));
  s.run(adam);
  // One sync: found_inf read before the step.
  ASSERT_EQ(s.rank.syncs.size(), 1u);
  EXPECT_EQ(s.rank.syncs[0], "aten::item");
  const auto names = [&] {
    std::vector<std::string> n;
    for (const auto& l : s.rank.launches) n.push_back(l.name);
    return n;
  }();
  const auto at = [&](const char* name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  EXPECT_LT(at("aten::_amp_foreach_non_finite_check_and_unscale_"), at("aten::_foreach_lerp_"));
  EXPECT_LT(at("aten::_foreach_addcdiv_"), at("aten::_amp_update_scale_"));
  EXPECT_LT(at("aten::_amp_update_scale_"), static_cast<std::ptrdiff_t>(names.size()));
  // Every gradient stays fp32, as the scaler requires.
  for (const auto& p : s.fc->parameters()) EXPECT_EQ(p.grad().dtype(), torch::kFloat32);
}

TEST(GradScaler, AFusedStepTakesTheFlagOnTheDeviceWithoutASync) {
  ScaledStep s;
  torch::optim::AdamW adam(s.fc->parameters(), torch::optim::AdamOptions().fused(true));
  s.run(adam);
  s.run(adam);
  EXPECT_TRUE(s.rank.syncs.empty());
  std::size_t checks = 0, fused = 0;
  for (const auto& l : s.rank.launches) {
    checks += l.name == "aten::_amp_foreach_non_finite_check_and_unscale_";
    fused += l.name == "aten::_fused_adamw_";
  }
  EXPECT_EQ(checks, 2u);  // the inf check still runs, with a unit scale
  EXPECT_EQ(fused, 2u);
}

TEST(GradScaler, ClippingAfterUnscaleIsDeviceSideAndMisuseIsAnError) {
  ScaledStep s;
  torch::optim::SGD sgd(s.fc->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  s.run(sgd, /*clip=*/true);
  EXPECT_EQ(s.rank.syncs.size(), 1u);  // the scaler's; clip_grad_norm_ adds none
  std::size_t norms = 0, unscales = 0;
  for (const auto& l : s.rank.launches) {
    norms += l.name == "aten::_foreach_norm";
    unscales += l.name == "aten::_amp_foreach_non_finite_check_and_unscale_";
  }
  EXPECT_EQ(norms, 1u);
  EXPECT_EQ(unscales, 1u);  // step() after unscale_() does not unscale again
  EXPECT_THROW(s.scaler.update(), torch::Error);  // nothing stepped since the last update
  torch::amp::GradScaler fresh;
  EXPECT_THROW(fresh.step(sgd), torch::Error);    // no scale() yet
  EXPECT_THROW(torch::amp::GradScaler(torch::amp::GradScalerOptions().growth_factor(0.5)), torch::Error);
  EXPECT_THROW((void)torch::nn::utils::clip_grad_norm_(sgd.parameters(), -1.0), torch::Error);
}

TEST(GradScaler, Fp16GradientsAreRefusedAndADisabledScalerPassesThrough) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::DefaultDtypeGuard half(torch::kFloat16);
  torch::nn::Linear fc(torch::nn::LinearOptions(16, 16));
  torch::optim::SGD sgd(fc->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  scaler.scale(torch::mean(fc(torch::empty({4, 16})))).backward();
  EXPECT_THROW(scaler.unscale_(sgd), torch::Error);
  torch::amp::GradScaler off(torch::amp::GradScalerOptions().enabled(false));
  const auto loss = torch::mean(fc(torch::empty({4, 16})));
  EXPECT_TRUE(off.scale(loss).is_same(loss));
  EXPECT_EQ(off.get_scale(), 1.0);
}

}  // namespace
