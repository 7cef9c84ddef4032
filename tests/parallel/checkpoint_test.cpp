// Activation checkpointing: the recomputation in backward runs under the forward's autocast.

#include <gtest/gtest.h>

#include "../torch/fake_rank.hpp"
#include "syntorch/parallel/training.hpp"
#include "syntorch/torch/torch.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;

TEST(Checkpoint, RecomputesUnderTheForwardsAutocastAndGivesFp32ParametersTheirGradients) {
  torch::testing::FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::nn::Linear fc(torch::nn::LinearOptions(64, 64));  // fp32
  const auto x = torch::empty({8, 64}).requires_grad_();
  torch::Tensor y;
  {
    torch::autocast::AutocastMode autocast(torch::kBFloat16);
    y = parallel::checkpoint([&](const torch::Tensor& in) { return torch::gelu(fc(in)); }, x);
  }
  EXPECT_EQ(y.dtype(), torch::kBFloat16);
  rank.launches.clear();
  torch::sum(y).backward();  // outside the region: the recomputation restores it
  std::size_t gemms = 0;
  for (const auto& l : rank.launches) {
    if (l.op.kind != OpKind::gemm) continue;
    ++gemms;
    EXPECT_EQ(l.op.dtype, DType::bf16) << l.name;
  }
  EXPECT_EQ(gemms, 3u);  // the recomputed forward, then dX and dW
  EXPECT_EQ(fc->weight.grad().dtype(), torch::kFloat32);
  EXPECT_EQ(x.grad().dtype(), torch::kFloat32);
  EXPECT_FALSE(torch::autocast::is_autocast_enabled());
  // The recomputation's weight casts went with its region: the next region casts them again.
  rank.launches.clear();
  {
    torch::autocast::AutocastMode autocast(torch::kBFloat16);
    (void)fc(x);
  }
  std::size_t casts = 0;
  for (const auto& l : rank.launches) casts += l.op.kind == OpKind::copy;
  EXPECT_EQ(casts, 3u);  // x, the weight and the bias
}

TEST(Checkpoint, SeveralInputsEachGetTheirGradientOnlyWhereOneIsNeeded) {
  torch::testing::FakeRank rank;
  runtime::RankGuard guard(&rank);
  const auto a = torch::empty({8, 64}).requires_grad_();
  const auto b = torch::empty({64, 32});  // needs no gradient
  const torch::Tensor y =
      parallel::checkpoint([](const std::vector<torch::Tensor>& in) { return torch::matmul(in[0], in[1]); }, {a, b});
  std::size_t forward_gemms = 0;
  for (const auto& l : rank.launches) forward_gemms += l.op.kind == OpKind::gemm;
  EXPECT_EQ(forward_gemms, 1u);
  rank.launches.clear();
  torch::sum(y).backward();
  std::size_t gemms = 0;
  for (const auto& l : rank.launches) gemms += l.op.kind == OpKind::gemm;
  EXPECT_EQ(gemms, 2u);  // the recomputed product, then dA only
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().sizes(), a.sizes());
  EXPECT_FALSE(b.grad().defined());
}

}  // namespace
