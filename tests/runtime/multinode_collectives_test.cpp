// Collectives across nodes as NCCL runs them. The ring's segment is shared by one ring per rank of
// a node (its channels), each crossing between nodes at a different rank, so that every network
// link of a node carries its part at once instead of one link carrying the whole ring. The tree is
// a chain in each node to a head and NCCL's double binary tree of the heads, one head per rank of a
// node: a few hops of latency where the ring pays 2(n-1) steps. Broadcast and reduce chains are
// shared between the rings the same way.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "predict_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;

using runtime_testing::collective;
using runtime_testing::config;
using runtime_testing::policy;

// "node[3].gpu[5]" -> "node[3]".
std::string node_of(const hw::Machine& m, std::uint32_t endpoint) {
  const std::string& name = m.endpoints()[endpoint].name;
  return name.substr(0, name.find('.'));
}

// The plan's transfers from one node to another, and the ranks that send them.
std::vector<const runtime::Transfer*> between_nodes(const hw::Machine& m, const runtime::CollectivePlan& plan) {
  std::vector<const runtime::Transfer*> out;
  for (const auto& t : plan.transfers) {
    if (node_of(m, t.src_endpoint) != node_of(m, t.dst_endpoint)) out.push_back(&t);
  }
  return out;
}
std::set<std::uint32_t> senders(const std::vector<const runtime::Transfer*>& transfers) {
  std::set<std::uint32_t> out;
  for (const runtime::Transfer* t : transfers) out.insert(t->src_endpoint);
  return out;
}

double busbw(double bytes, double ranks, double time_s) { return bytes * 2 * (ranks - 1) / ranks / time_s; }

TEST(MultiNodeRing, EveryRankOfANodeCarriesAShareAcrossTheNetwork) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100_x2.json"));
  runtime::Predictor ring(m, policy("allreduce=ring"));
  const std::uint64_t bytes = 1ull << 30;
  const auto p = ring.predict(collective(OpKind::allreduce, 16, bytes));
  ASSERT_TRUE(p.plan.has_value());
  // Every one of the 8 ranks of each node sends across the network (each of the 8 rings leaves a
  // node at a different rank), and together they carry what one ring's crossings would.
  const auto crossing = between_nodes(m, *p.plan);
  double crossing_bytes = 0;
  for (const runtime::Transfer* t : crossing) crossing_bytes += t->bytes;
  EXPECT_EQ(senders(crossing).size(), 16u);
  // Two crossings (node 0 to 1 and back), each carrying 2(n-1) segments of bytes/n, split 8 ways.
  EXPECT_NEAR(crossing_bytes, 2 * 2.0 * 15 / 16 * bytes, bytes * 1e-6);

  // So the ring's bandwidth is the node's eight 400 Gb/s links (45 GB/s each at their 0.9
  // efficiency), not one link's, as long as NVLink keeps up with the ring within the nodes.
  const double bw = busbw(static_cast<double>(bytes), 16, p.time_s);
  EXPECT_GT(bw, 8 * 45e9 * 0.9);
  EXPECT_LT(bw, 8 * 45e9 * 1.01);
}

TEST(MultiNodeRing, DgxA100NodesReachTheirEightLinksBandwidth) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100_superpod.json"));
  runtime::Predictor ring(m, policy("allreduce=ring"));
  const std::uint64_t bytes = 1ull << 30;
  const auto all = ring.predict(collective(OpKind::allreduce, 64, bytes));
  ASSERT_TRUE(all.plan.has_value());
  // 8 nodes of 8 A100s, each with eight 200 Gb/s HDR links: about 8 x 22.5 GB/s of bus bandwidth
  // (NCCL reaches about 185 GB/s between DGX A100 nodes).
  const double bw = busbw(static_cast<double>(bytes), 64, all.time_s);
  EXPECT_GT(bw, 160e9);
  EXPECT_LT(bw, 8 * 22.5e9 * 1.01);
  bool explained = false;
  for (const std::string& line : all.plan->why) explained = explained || line.find("ring: 8 rings") == 0;
  EXPECT_TRUE(explained) << "the plan says it runs a ring per rank of a node";
}

TEST(MultiNodeRing, AutoTakesTheTreeForSmallMessagesNvlsTreeBetweenTwoNodesAndTheRingBeyond) {
  // NCCL's tuner: NVLS_TREE between two nodes, where its network part is one share each way; from
  // four nodes on its tuner counts half the network bandwidth for the tree, and the ring wins.
  const std::uint64_t bytes = 1ull << 30;
  const hw::Machine two_nodes = hw::Machine::load(config("dgx_h100_x2.json"));
  runtime::Predictor two(two_nodes, {});
  EXPECT_EQ(two.predict(collective(OpKind::allreduce, 16, bytes)).plan->algorithm, "nvlstree");
  // A small message goes the fewest hops: NCCL's tree in its low-latency protocol.
  const auto small = two.predict(collective(OpKind::allreduce, 16, 64 << 10));
  EXPECT_EQ(small.plan->algorithm, "tree");
  EXPECT_EQ(small.plan->protocol, "ll");
  const hw::Machine pod = hw::Machine::load(config("dgx_h100_superpod.json"));
  runtime::Predictor four(pod, {});
  EXPECT_EQ(four.predict(collective(OpKind::allreduce, 32, 4 * bytes)).plan->algorithm, "ring");
}

TEST(MultiNodeRing, ABroadcastsChainsLeaveTheNodesOnEveryRailButTheRoots) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100_x2.json"));
  runtime::Predictor p(m, {});
  const std::uint64_t bytes = 1ull << 30;
  const auto b = p.predict(collective(OpKind::broadcast, 16, bytes));
  ASSERT_TRUE(b.plan.has_value());
  // Seven chains, each leaving node 0 at a different rank after the root: ranks 1-7 of node 0
  // each send a seventh of the message to node 1.
  EXPECT_EQ(senders(between_nodes(m, *b.plan)).size(), 7u);
  // So the whole message reaches node 1 over seven 400 Gb/s links (45 GB/s at their efficiency),
  // not one, while NVLink carries it along each node's chains.
  EXPECT_GT(b.time_s, bytes / (7 * 45e9));
  EXPECT_LT(b.time_s, bytes / 45e9 / 4);
}

// "node[3].gpu[5]" -> "gpu[5]".
std::string local_of(const hw::Machine& m, std::uint32_t endpoint) {
  const std::string& name = m.endpoints()[endpoint].name;
  return name.substr(name.find('.') + 1);
}

TEST(MultiNodeTree, ChainsToHeadsAndATreeOfHeadsPayAFewHopsOfLatency) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100_superpod.json"));
  runtime::Predictor tree(m, policy("allreduce=tree"));
  runtime::Predictor ring(m, policy("allreduce=ring"));
  const auto small = tree.predict(collective(OpKind::allreduce, 64, 64 << 10));
  ASSERT_TRUE(small.plan.has_value());
  // Between nodes only heads of one local index talk (one rail), and every rank of a node is a
  // head of some part, so every network link carries the tree.
  const auto crossing = between_nodes(m, *small.plan);
  for (const runtime::Transfer* t : crossing) EXPECT_EQ(local_of(m, t->src_endpoint), local_of(m, t->dst_endpoint));
  EXPECT_EQ(senders(crossing).size(), 64u);
  // 64 KiB over 8 nodes of 8: 2 x (7 chain hops + 3 tree levels) against the ring's 126 steps.
  EXPECT_LT(3 * small.time_s, ring.predict(collective(OpKind::allreduce, 64, 64 << 10)).time_s);
  // For a large message the ring's bandwidth wins, and auto goes from the tree to the ring.
  runtime::Predictor automatic(m, {});
  EXPECT_EQ(automatic.predict(collective(OpKind::allreduce, 64, 64 << 10)).plan->algorithm, "tree");
  EXPECT_EQ(automatic.predict(collective(OpKind::allreduce, 64, 1ull << 30)).plan->algorithm, "ring");
  EXPECT_LT(ring.predict(collective(OpKind::allreduce, 64, 1ull << 30)).time_s,
            tree.predict(collective(OpKind::allreduce, 64, 1ull << 30)).time_s);
}

}  // namespace
