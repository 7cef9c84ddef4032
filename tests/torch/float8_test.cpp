// fp8 inference in the torch layer: fp8 Linear weights under fp8_model_init, GEMMs in fp8 with
// the input quantised first under fp8_autocast, an fp8 KV cache read by 16-bit attention.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace {

using namespace syntorch;
using syntorch::DType;
using runtime::OpKind;
using torch::testing::FakeRank;

TEST(Float8, ModelInitBuildsFp8WeightsAndAutocastRunsTheGemmInFp8) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::NoGradGuard no_grad;  // inference: fp8 Linear has no backward here
  torch::DefaultDtypeGuard dtype(torch::kFloat16);
  torch::nn::Linear linear{nullptr};
  {
    torch::fp8::ModelInitGuard init;
    linear = torch::nn::Linear(torch::nn::LinearOptions(4096, 1024).bias(true));
  }
  EXPECT_EQ(linear->weight.dtype(), torch::kFloat8_e4m3fn);
  EXPECT_EQ(linear->bias.dtype(), torch::kFloat16);
  const auto x = torch::empty({64, 4096});
  EXPECT_THROW(linear->forward(x), torch::Error);  // an fp8 weight outside autocast: a dtype mismatch
  rank.launches.clear();
  torch::fp8::AutocastGuard autocast;
  const auto y = linear->forward(x);
  EXPECT_EQ(y.dtype(), torch::kFloat16);
  ASSERT_EQ(rank.launches.size(), 2u);
  EXPECT_EQ(rank.launches[0].op.kind, OpKind::copy);  // the input quantised to fp8: one pass
  EXPECT_EQ(rank.launches[0].op.elements, 64u * 4096);
  EXPECT_EQ(rank.launches[1].op.kind, OpKind::gemm);
  EXPECT_EQ(rank.launches[1].op.dtype, DType::fp8);
  EXPECT_EQ(rank.launches[1].op.m, 64u);
}

TEST(Float8, ScaledMmTakesFp8MatricesAndPerTensorScales) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  const auto a = torch::empty({128, 256}, torch::kFloat8_e4m3fn);
  const auto b = torch::empty({256, 512}, torch::kFloat8_e4m3fn);
  const auto scale = torch::empty({}, torch::kFloat32);
  const auto c = torch::_scaled_mm(a, b, scale, scale, {}, torch::kBFloat16);
  EXPECT_EQ(c.dtype(), torch::kBFloat16);
  EXPECT_EQ(c.size(0), 128);
  EXPECT_EQ(c.size(1), 512);
  EXPECT_EQ(rank.launches.back().op.dtype, DType::fp8);
  EXPECT_THROW(torch::_scaled_mm(torch::empty({128, 256}, torch::kFloat16), torch::empty({256, 512}, torch::kFloat16),
                                 scale, scale),
               torch::Error);
  EXPECT_THROW(torch::_scaled_mm(a, b, torch::empty({4}, torch::kFloat32), scale), torch::Error);
}

TEST(Float8, AttentionReadsAnFp8KvCacheWithA16BitQuery) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  const auto q = torch::empty({2, 32, 1, 128}, torch::kFloat16);
  const auto kv = torch::empty({2, 8, 1000, 128}, torch::kFloat8_e4m3fn);
  const auto out = torch::scaled_dot_product_attention(q, kv, kv, {}, 0.0, false, std::nullopt, true);
  EXPECT_EQ(out.dtype(), torch::kFloat16);
  const runtime::OpDesc& op = rank.launches.back().op;
  EXPECT_EQ(op.dtype, DType::fp16);
  ASSERT_TRUE(op.kv_dtype.has_value());
  EXPECT_EQ(*op.kv_dtype, DType::fp8);
  // A query on another device than the fp8 cache is still refused.
  EXPECT_THROW(torch::scaled_dot_product_attention(
                   torch::empty({2, 32, 1, 128}, torch::TensorOptions(torch::kFloat16).device(torch::kCPU)), kv, kv),
               torch::Error);
  // fp8 keys with an fp32 query stay PyTorch's dtype error.
  EXPECT_THROW(torch::scaled_dot_product_attention(torch::empty({2, 32, 1, 128}, torch::kFloat32), kv, kv),
               torch::Error);
}

}  // namespace
