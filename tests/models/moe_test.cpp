// The mixture-of-experts MLP on meta tensors: routing loads as the imbalance parameter says, and
// the expert FLOPs of a token set by how many experts it visits, not by how many there are.

#include <gtest/gtest.h>

#include <numeric>

#include "../torch/fake_rank.hpp"
#include "syntorch/models/moe.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace {

using namespace syntorch;

TEST(ExpertLoads, BalancedByDefaultAndSkewedWhenAsked) {
  EXPECT_EQ(models::expert_loads(16, 8, 2, 0), std::vector<std::int64_t>(8, 4));
  const auto uneven = models::expert_loads(10, 8, 2, 0);  // 20 rows: remainders to the first
  EXPECT_EQ(uneven, (std::vector<std::int64_t>{3, 3, 3, 3, 2, 2, 2, 2}));
  const auto skewed = models::expert_loads(1000, 8, 2, 1.0);
  EXPECT_EQ(std::accumulate(skewed.begin(), skewed.end(), std::int64_t{0}), 2000);
  for (std::size_t e = 1; e < skewed.size(); ++e) EXPECT_LE(skewed[e], skewed[e - 1]);
  EXPECT_GT(skewed[0], 3 * skewed[7]);
  // Past what one token can give (each picks distinct experts), the hottest are capped at the
  // token count and the rest re-shared.
  const auto extreme = models::expert_loads(100, 8, 2, 8.0);
  EXPECT_EQ(extreme[0], 100);
  EXPECT_GT(extreme[1], 90);  // most of what expert 0 cannot take
  EXPECT_LE(extreme[1], 100);
  EXPECT_EQ(std::accumulate(extreme.begin(), extreme.end(), std::int64_t{0}), 200);
  EXPECT_THROW(models::expert_loads(10, 8, 9, 0), std::invalid_argument);
}

TEST(Routing, EveryRanksTokensSpreadOverTheExpertsAndAgreeWithTheLoads) {
  // Decode of 8 tokens over tp 8, one per rank: each expert gets 2 rows, from two ranks, and
  // each rank's token visits 2 distinct experts.
  const models::Routing one_each(std::vector<std::int64_t>(8, 1), 8, 2, 0);
  for (std::int64_t e = 0; e < 8; ++e) {
    EXPECT_EQ(one_each.expert_rows(e), 2);
    std::int64_t from_ranks = 0;
    for (std::size_t r = 0; r < 8; ++r) {
      EXPECT_LE(one_each.rows(r, e), 1);
      from_ranks += one_each.rows(r, e);
    }
    EXPECT_EQ(from_ranks, 2);
  }
  // Uneven shares (the last rank's padded share holds 3 real tokens) and skew: rows and columns
  // add up, and no rank sends an expert more rows than it has tokens.
  const std::vector<std::int64_t> tokens{5, 5, 5, 3};
  const models::Routing skewed(tokens, 8, 2, 1.2);
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    std::int64_t sent = 0;
    for (std::int64_t e = 0; e < 8; ++e) {
      EXPECT_LE(skewed.rows(r, e), tokens[r]);
      sent += skewed.rows(r, e);
    }
    EXPECT_EQ(sent, 2 * tokens[r]);
  }
  EXPECT_EQ(models::expert_loads(18, 8, 2, 1.2)[0], skewed.expert_rows(0));
}

// FLOPs of the grouped GEMMs one forward of a MoE MLP launches.
double expert_flops(std::int64_t experts, std::int64_t top_k) {
  torch::testing::FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::NoGradGuard no_grad;  // inference
  parallel::initialize_model_parallel(1, 1);
  models::MoeMlp moe(models::MoeOptions{256, 512, experts, top_k, 0});
  (void)moe->forward(torch::empty({64, 256}));
  double flops = 0;
  for (const auto& l : rank.launches) {
    if (l.op.kind == runtime::OpKind::grouped_gemm) flops += runtime::op_flops(l.op);
  }
  return flops;
}

TEST(MoeMlp, ExpertFlopsScaleWithTopKNotWithTheExpertCount) {
  const double base = expert_flops(8, 2);
  // 64 tokens x 2 experts x (gate+up 256->1024, down 512->256).
  EXPECT_DOUBLE_EQ(base, 64.0 * 2 * (2.0 * 256 * 1024 + 2.0 * 512 * 256));
  EXPECT_DOUBLE_EQ(expert_flops(64, 2), base);
  EXPECT_DOUBLE_EQ(expert_flops(8, 4), 2 * base);
}

TEST(MoeMlp, LaunchesTheServingEnginesKernels) {
  torch::testing::FakeRank rank;
  runtime::RankGuard guard(&rank);
  torch::NoGradGuard no_grad;  // inference
  parallel::initialize_model_parallel(1, 1);
  models::MoeMlp moe(models::MoeOptions{256, 512, 8, 2, 0});
  const auto out = moe->forward(torch::empty({64, 256}));
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{64, 256}));
  std::vector<std::string> names;
  for (const auto& l : rank.launches) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string>{"aten::linear", "syntorch::topk_softmax", "syntorch::moe_permute",
                                             "syntorch::grouped_mm", "syntorch::silu_and_mul", "syntorch::grouped_mm",
                                             "syntorch::moe_unpermute"}));
}

}  // namespace
