// Mixture-of-experts kernels and the all-to-all: a grouped GEMM pays for its groups' padding and
// weights, not for experts that got no tokens; an all-to-all moves (n-1)/n of each rank's data;
// the hierarchical algorithm exists only across nodes and wins where latency rules.

#include <gtest/gtest.h>

#include <numeric>

#include "predict_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;

using runtime_testing::config;
using runtime_testing::policy;

runtime::OpDesc grouped(std::uint64_t groups, std::uint64_t m, std::vector<std::uint64_t> splits = {}) {
  runtime::OpDesc op;
  op.kind = OpKind::grouped_gemm;
  op.batch = groups;
  op.m = m;
  op.n = 4096;
  op.k = 14336;
  op.splits = std::move(splits);
  return op;
}

runtime::OpDesc alltoall(std::uint64_t ranks, std::uint64_t bytes) {
  return runtime_testing::collective(OpKind::alltoall, ranks, bytes);
}

TEST(GroupedGemm, ExpertsWithoutTokensCostNoWeightReadsAndImbalancePaysItsPadding) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Predictor predictor(m, {});
  // Decode: 32 routed rows over 8 experts. All 8 hold rows: all 8 weights stream from HBM.
  const auto even = predictor.predict(grouped(8, 32));
  // The same rows on 2 experts: 6 weights are never read.
  const auto two = predictor.predict(grouped(8, 32, {16, 16, 0, 0, 0, 0, 0, 0}));
  EXPECT_NEAR(two.hbm_bytes / even.hbm_bytes, 2.0 / 8.0, 0.02);
  EXPECT_LT(two.time_s, 0.3 * even.time_s);
  EXPECT_DOUBLE_EQ(two.flops, even.flops);  // the same products
  // Prefill: 8192 rows; skewed so that expert 0 holds half of them. Every group's rows pad to
  // whole tiles and the tiles share the device's waves, so the FLOPs are equal and the time
  // within a few percent: imbalance within one device is nearly free...
  const auto balanced = predictor.predict(grouped(8, 8192));
  const auto skewed = predictor.predict(grouped(8, 8192, {4096, 1024, 1024, 512, 512, 512, 256, 256}));
  EXPECT_DOUBLE_EQ(skewed.flops, balanced.flops);
  EXPECT_NEAR(skewed.time_s / balanced.time_s, 1.0, 0.05);
  // ...while groups smaller than a tile pay for the padding: 8192 rows in groups of 1..
  std::vector<std::uint64_t> ragged(64, 1);
  ragged[0] = 8192 - 63;
  const auto padded = predictor.predict(grouped(64, 8192, ragged));
  const auto even64 = predictor.predict(grouped(64, 8192));
  EXPECT_GT(padded.time_s, even64.time_s);
}

TEST(GroupedGemm, BadGroupSizesAreNamed) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Predictor predictor(m, {});
  try {
    (void)predictor.predict(grouped(4, 100, {50, 50}));
    FAIL() << "two group sizes for four groups must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("2 group sizes summing to 100, expected 4"), std::string::npos)
        << e.diagnostics().to_string();
  }
}

TEST(AllToAll, EachRankMovesNMinusOneNthsOfItsData) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::Predictor predictor(m, policy("alltoall=pairwise"));
  const std::uint64_t bytes = 64ull << 20;
  const auto p = predictor.predict(alltoall(8, bytes));
  ASSERT_TRUE(p.plan.has_value());
  EXPECT_EQ(p.plan->algorithm, "pairwise");
  EXPECT_DOUBLE_EQ(p.plan->bytes_per_rank, bytes * 7.0 / 8.0);
  double moved = 0;
  for (const auto& t : p.plan->transfers) moved += t.bytes;
  EXPECT_DOUBLE_EQ(moved, 8 * bytes * 7.0 / 8.0);  // nothing a rank keeps crosses a link
  // Bandwidth-bound on one NVSwitch: each rank's 56 MiB out over its NVLink at its achievable rate.
  const double link = m.links()[m.route(m.devices()[0].endpoint, m.devices()[1].endpoint).hops.front().link]
                          .bandwidth_bytes_per_s;
  EXPECT_GT(p.time_s, bytes * 7.0 / 8.0 / link);
  EXPECT_LT(p.time_s, 2.0 * bytes * 7.0 / 8.0 / link);
}

TEST(AllToAll, UnevenSharesLoadTheBusiestRank) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::Predictor predictor(m, policy("alltoall=pairwise"));
  // Every rank sends half of its 8 MiB to rank 0 (a hot expert) and the rest evenly.
  const std::uint64_t n = 8, bytes = 8ull << 20;
  runtime::OpDesc op = alltoall(n, bytes);
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) op.splits.push_back(j == 0 ? bytes / 2 : bytes / 2 / (n - 1));
  }
  op.splits[n - 1] += bytes - std::accumulate(op.splits.begin(), op.splits.begin() + n, std::uint64_t{0});
  for (std::uint64_t i = 1; i < n; ++i) op.splits[i * n + n - 1] = op.splits[n - 1];
  const auto hot = predictor.predict(op);
  const auto even = predictor.predict(alltoall(n, bytes));
  // Rank 0 receives 7 x 4 MiB instead of 7 x 1 MiB, one message a round: the exchange takes
  // longer though each larger message uses more of the library's channels.
  EXPECT_GT(hot.time_s, 1.4 * even.time_s);
}

TEST(AllToAll, HierarchicalOnlyAcrossNodesWhereItSavesLatency) {
  const hw::Machine one = hw::Machine::load(config("dgx_h100.json"));
  runtime::Predictor forced(one, policy("alltoall=hierarchical"));
  try {
    (void)forced.predict(alltoall(8, 1 << 20));
    FAIL() << "one node has nothing to be hierarchical over";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("hierarchical alltoall needs ranks on several nodes"),
              std::string::npos)
        << e.diagnostics().to_string();
  }
  const hw::Machine two = hw::Machine::load(config("dgx_h100_x2.json"));
  runtime::Predictor pairwise(two, policy("alltoall=pairwise"));
  runtime::Predictor hierarchical(two, policy("alltoall=hierarchical"));
  runtime::Predictor automatic(two, {});
  // Small messages: 2 x (7 + 1) rounds' latencies instead of 15.
  const auto small = alltoall(16, 64 << 10);
  EXPECT_LT(hierarchical.predict(small).time_s, pairwise.predict(small).time_s);
  EXPECT_EQ(automatic.predict(small).plan->algorithm, "hierarchical");
  const auto h = hierarchical.predict(small);
  std::string why;
  for (const auto& line : h.plan->why) why += line + "\n";
  EXPECT_NE(why.find("2 nodes of 8 ranks"), std::string::npos) << why;
}

}  // namespace
