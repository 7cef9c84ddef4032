// In-switch reduction across nodes (NCCL's NVLS_TREE) and NCCL's algorithm names: each node's
// switch reduces, only a share of the message crosses the network, and nvls/collnet name the
// in-switch reduction in policies.

#include <gtest/gtest.h>

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
  // A flat ring sends 2(n-1)/n of the whole message through one network link per node.
  EXPECT_LT(5 * p.time_s, ring.predict(allreduce(16, bytes)).time_s);
  runtime::Predictor automatic(m, {});
  EXPECT_EQ(automatic.predict(allreduce(16, bytes)).plan->algorithm, "nvlstree");
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
