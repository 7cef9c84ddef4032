// Mirrored ranks (EngineOptions::mirror_of): identical replicas simulated once. A mirrored rank
// runs no program but joins its representative's collectives, so those move every member's
// bytes; its results are its representative's.

#include <gtest/gtest.h>

#include <string>

#include "syntorch/hw/machine.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace {

using namespace syntorch;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

// 8 ranks as 4 data-parallel replicas of a 2-rank tensor-parallel pair: a GEMM, an all-reduce
// over the pair, then one over each data-parallel group (ranks tp_rank + 2 dp_rank).
runtime::EngineResult run(std::vector<int> mirror_of) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::EngineOptions options;
  options.mirror_of = std::move(mirror_of);
  runtime::Engine engine(m, {}, 8, options);
  return engine.run([&](runtime::RankContext& ctx) {
    torch::DefaultDtypeGuard bf16(torch::kBFloat16);
    const auto& st = parallel::initialize_model_parallel(2);
    torch::Tensor x = torch::empty({4096, 8192});
    torch::Tensor w = torch::empty({8192, 8192});
    torch::Tensor y = torch::matmul(x, w);
    parallel::all_reduce(y, st.tp_group);
    torch::Tensor grad = torch::empty({256, 1024, 1024});
    parallel::all_reduce(grad, st.dp_group);
    (void)ctx;
  });
}

TEST(Mirror, AMirroredReplicaRunsNoProgramButItsCollectivesMoveEveryMembersBytes) {
  const runtime::EngineResult all = run({});
  const runtime::EngineResult one = run({0, 1, 0, 1, 0, 1, 0, 1});
  EXPECT_EQ(all.simulated_ranks, 8u);
  EXPECT_EQ(one.simulated_ranks, 2u);
  ASSERT_EQ(one.ranks.size(), 8u) << "every rank has its results";
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(one.ranks[r].rank, r);
    EXPECT_EQ(one.ranks[r].device, static_cast<std::uint32_t>(r));
    EXPECT_EQ(one.ranks[r].mirror_of, r < 2 ? -1 : r % 2);
    EXPECT_EQ(one.ranks[r].kernels, one.ranks[r % 2].kernels);
    // What every rank ran when all ran: the mirror stands for its rank's own program.
    EXPECT_EQ(one.ranks[r].kernels, all.ranks[r].kernels);
    EXPECT_EQ(one.ranks[r].collectives, all.ranks[r].collectives);
    EXPECT_EQ(one.ranks[r].memory.peak_allocated_bytes, all.ranks[r].memory.peak_allocated_bytes);
  }
  // The data-parallel all-reduce still runs over four members: as long as when all ran.
  EXPECT_EQ(one.ranks[0].communication_ps, all.ranks[0].communication_ps);
  EXPECT_EQ(one.ranks[0].collectives, 2u);
  // Replicas on separate GPUs of one NVSwitch: mirroring changes nothing.
  EXPECT_EQ(one.ranks[0].device_finish_ps, all.ranks[0].device_finish_ps);
  EXPECT_LT(one.events, all.events);
}

TEST(Mirror, AMirrorThatIsNotASimulatedRankOrASendToAMirrorIsRefused) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::EngineOptions options;
  options.mirror_of = {0, 0, 1, 3};  // rank 2 mirrors rank 1, which mirrors rank 0
  EXPECT_THROW(runtime::Engine(m, {}, 4, options), std::invalid_argument);
  options.mirror_of = {0, 0};
  EXPECT_THROW(runtime::Engine(m, {}, 4, options), std::invalid_argument);
  options.mirror_of = {0, 0, 2, 2};
  options.trace_ranks = {1};  // a mirror runs nothing to trace
  EXPECT_THROW(runtime::Engine(m, {}, 4, options), std::invalid_argument);
  options.trace_ranks = {};
  runtime::Engine engine(m, {}, 4, options);
  try {
    engine.run([](runtime::RankContext& ctx) {
      torch::Tensor t = torch::empty({1024}, torch::kFloat32);
      if (ctx.rank() == 0) parallel::send(t, 1);
      if (ctx.rank() == 2) parallel::recv(t, 0);
    });
    FAIL() << "a send to a mirrored rank ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("peer rank 1 mirrors rank 0"), std::string::npos) << e.what();
  }
}

// A group holding a mirrored rank but not its representative cannot be simulated once: refused,
// naming the group, every time it is asked for (nothing half-built is kept).
TEST(Mirror, AGroupWithoutTheMirrorsRepresentativeIsRefused) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::EngineOptions options;
  options.mirror_of = {0, 1, 0, 1};
  runtime::Engine engine(m, {}, 4, options);
  try {
    engine.run([](runtime::RankContext& ctx) {
      if (ctx.rank() != 1) return;
      const parallel::ProcessGroup g{ctx.new_group({1, 2}), {1, 2}, 0};  // 2 mirrors 0, which is not in it
      torch::Tensor t = torch::empty({1024}, torch::kFloat32);
      parallel::all_reduce(t, g);
    });
    FAIL() << "the group ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mirrors rank 0 outside the group"), std::string::npos) << e.what();
  }
}

}  // namespace
