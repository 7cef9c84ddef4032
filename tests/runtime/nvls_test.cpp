// In-switch reduction across nodes (NCCL's NVLS_TREE) and NCCL's algorithm names: each node's
// switch reduces, only a share of the message crosses the network (over a double binary tree of
// the nodes), and nvls/collnet name the in-switch reduction in policies.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "predict_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;

using runtime_testing::config;
using runtime_testing::policy;

runtime::OpDesc allreduce(std::uint64_t ranks, std::uint64_t bytes) {
  return runtime_testing::collective(OpKind::allreduce, ranks, bytes);
}

TEST(NvlsTree, EachNodesSwitchReducesAndOnlyAShareCrossesTheNetwork) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100_x2.json"));
  const std::uint64_t bytes = 1ull << 30;
  runtime::Predictor nvlstree(m, policy("allreduce=nvlstree"));
  runtime::Predictor ring(m, policy("allreduce=ring"));
  const auto p = nvlstree.predict(allreduce(16, bytes));
  ASSERT_TRUE(p.plan.has_value());
  EXPECT_EQ(p.plan->algorithm, "nvlstree");
  // Between the nodes each rank sends 2(N-1)/N of its 1/8 share: 1/8 of the message for N = 2.
  double between_nodes = 0;
  for (const auto& t : p.plan->transfers) {
    const auto& a = m.endpoints()[t.src_endpoint];
    const auto& b = m.endpoints()[t.dst_endpoint];
    if (a.kind == hw::EndpointKind::device && b.kind == hw::EndpointKind::device) between_nodes += t.bytes;
  }
  EXPECT_NEAR(between_nodes / 16, bytes / 8.0, 1.0);
  // A ring over all 16 ranks sends 2(n-1)/n of an eighth of the message through each network
  // link (its rings cross at every rank of a node), nearly twice the tree's share.
  EXPECT_LT(1.3 * p.time_s, ring.predict(allreduce(16, bytes)).time_s);
  runtime::Predictor automatic(m, {});
  EXPECT_EQ(automatic.predict(allreduce(16, bytes)).plan->algorithm, "nvlstree");
}

TEST(NvlsTree, BeyondTwoNodesAnInnerNodeOfATreeCarriesTwoShares) {
  // Four nodes: NCCL's double binary tree puts one node under the root of tree 0 with two
  // children of its own, and makes it a leaf of tree 1: its rail's links carry half a share per
  // tree edge, two shares in all each way, where the root of tree 0 carries one.
  const hw::Machine m = hw::Machine::load(config("p5en_h200_x4.json"));
  const std::uint64_t bytes = 4ull << 30;
  runtime::Predictor nvlstree(m, policy("allreduce=nvlstree"));
  const auto p = nvlstree.predict(allreduce(32, bytes));
  ASSERT_TRUE(p.plan.has_value());
  std::map<std::uint32_t, double> sent;  // bytes each rank sends to another node
  for (const auto& t : p.plan->transfers) {
    const auto& a = m.endpoints()[t.src_endpoint];
    const auto& b = m.endpoints()[t.dst_endpoint];
    if (a.kind == hw::EndpointKind::device && b.kind == hw::EndpointKind::device) sent[t.src_endpoint] += t.bytes;
  }
  const double share = bytes / 8.0;
  double most = 0, least = 1e30;
  for (const auto& [rank, b] : sent) {
    most = std::max(most, b);
    least = std::min(least, b);
  }
  EXPECT_EQ(sent.size(), 32u);
  EXPECT_NEAR(most, 2 * share, 1.0);
  EXPECT_NEAR(least, 1 * share, 1.0);
  // So over four nodes the ring, whose links carry 2(n-1)/n of an eighth, is the faster, as
  // measured on four H200 nodes (365 against 310 GB/s of bus bandwidth), and auto takes it.
  runtime::Predictor ring(m, policy("allreduce=ring"));
  EXPECT_LT(ring.predict(allreduce(32, bytes)).time_s, p.time_s);
  runtime::Predictor automatic(m, {});
  EXPECT_EQ(automatic.predict(allreduce(32, bytes)).plan->algorithm, "ring");
}

TEST(NvlsTree, NeedsSeveralNodesWithReducingSwitches) {
  const hw::Machine one = hw::Machine::load(config("dgx_h100.json"));
  runtime::Predictor forced(one, policy("allreduce=nvlstree"));
  try {
    (void)forced.predict(allreduce(8, 1 << 20));
    FAIL() << "one node: nothing to tree over";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("nvlstree allreduce needs several nodes"), std::string::npos)
        << e.diagnostics().to_string();
  }
}

TEST(NcclNames, NvlsAndCollnetNameTheInSwitchReduction) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  for (const char* name : {"nvls", "collnet", "in_switch"}) {
    runtime::Predictor p(m, policy(std::string("allreduce=") + name));
    EXPECT_EQ(p.predict(allreduce(8, 1 << 30)).plan->algorithm, "in_switch") << name;
  }
  Diagnostics d;
  (void)runtime::KernelPolicy::parse("allreduce=nvlz", d);
  EXPECT_NE(d.to_string().find("unknown implementation \"nvlz\""), std::string::npos) << d.to_string();
}

}  // namespace
