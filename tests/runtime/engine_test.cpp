// The Engine: rank programs on one simulator, with collectives that make ranks wait.

#include <gtest/gtest.h>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime::OpDesc;
using runtime::OpKind;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

OpDesc gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  OpDesc op;
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  return op;
}

OpDesc allreduce(std::uint32_t ranks, std::uint64_t bytes) {
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = ranks;
  op.bytes = bytes;
  return op;
}

TEST(Engine, ACollectiveWaitsForTheLastRankToArrive) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  const auto r = engine.run([](runtime::RankContext& ctx) {
    const runtime::GroupId g = ctx.new_group({0, 1});
    if (ctx.rank() == 1) ctx.launch(gemm(8192, 8192, 8192), "aten::mm");  // about 4 ms
    ctx.collective(allreduce(2, 1 << 20), g, "nccl:all_reduce");
    ctx.synchronize("end");
  });
  ASSERT_FALSE(r.oom);
  ASSERT_EQ(r.ranks.size(), 2u);
  // Rank 0 spends the whole GEMM waiting inside its collective; both finish it together, after
  // the same time moving data.
  EXPECT_GT(r.ranks[0].waiting_ps, r.ranks[1].compute_bound_ps * 9 / 10);
  EXPECT_LT(r.ranks[1].waiting_ps, r.ranks[1].compute_bound_ps / 10);
  EXPECT_EQ(r.ranks[0].communication_ps, r.ranks[1].communication_ps);
  EXPECT_EQ(r.ranks[0].device_finish_ps, r.ranks[1].device_finish_ps);
  EXPECT_EQ(r.ranks[0].collectives, 1u);
}

// A peer copy moves its bytes over the links between the two devices with the peer taking no
// part; where ranks mirror the caller, each copies its own share with the rank at its offset,
// so a replica's shards move side by side, each over its own links.
TEST(Engine, APeerCopyMovesItsBytesOverTheLinksAndMirrorsCopyTheirOwn) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const std::uint64_t bytes = 1ULL << 30;
  const auto copy_time_s = [&](int world, std::vector<int> mirror, bool pull) {
    runtime::EngineOptions o;
    o.mirror_of = std::move(mirror);
    runtime::Engine engine(m, {}, world, o);
    double took = 0;
    engine.run([&](runtime::RankContext& ctx) {
      if (ctx.rank() != 0) return;
      const double begin = ctx.host_time_s();
      if (pull) {
        ctx.copy_from_peer(world / 2, bytes, "kv pull");
      } else {
        ctx.copy_to_peer(world / 2, bytes, "kv push");
      }
      ctx.synchronize("copied");
      took = ctx.host_time_s() - begin;
    });
    return took;
  };
  const double one = copy_time_s(2, {}, false);
  // 1 GiB over one H100's NVLink (450 GB/s each way): a few milliseconds.
  EXPECT_GT(one, static_cast<double>(bytes) / 450e9);
  EXPECT_LT(one, 2.0 * static_cast<double>(bytes) / 450e9);
  EXPECT_NEAR(copy_time_s(2, {}, true), one, 0.01 * one);
  // Rank 1 mirrors rank 0 and copies with rank 3 as rank 0 does with rank 2: its own links, the
  // same time.
  EXPECT_NEAR(copy_time_s(4, {0, 0, 2, 2}, false), one, 0.01 * one);
}

TEST(Engine, StreamsMadeWhileKernelsRunLeaveThoseKernelsIntact) {
  // Each new stream grows the rank's per-stream state while the kernels launched before it are
  // still running and will write their results there.
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 1);
  const auto r = engine.run([](runtime::RankContext& ctx) {
    for (int i = 0; i < 40; ++i) {
      ctx.launch(gemm(2048, 2048, 2048), "aten::mm");
      const std::uint32_t s = ctx.new_stream();
      const std::uint32_t before = ctx.current_stream();
      ctx.set_stream(s);
      ctx.launch(gemm(1024, 1024, 1024), "aten::mm");
      ctx.set_stream(before);
    }
    ctx.synchronize("end");
  });
  ASSERT_FALSE(r.oom);
  EXPECT_EQ(r.ranks[0].kernels, 80u);
  EXPECT_GT(r.ranks[0].compute_bound_ps + r.ranks[0].memory_bound_ps, 0u);
}

TEST(Engine, AFluidCollectiveAloneTakesItsChunkLevelTime) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Predictor predictor(m, {});
  const double chunk_level_s = predictor.predict(allreduce(8, 64 << 20)).time_s;
  runtime::Engine engine(m, {}, 8);
  const auto r = engine.run([](runtime::RankContext& ctx) {
    std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
    ctx.collective(allreduce(8, 64 << 20), ctx.new_group(all), "nccl:all_reduce");
  });
  const double fluid_s = static_cast<double>(r.ranks[3].communication_ps) * 1e-12;
  EXPECT_NEAR(fluid_s, chunk_level_s, chunk_level_s * 1e-6);
}

TEST(Engine, RunsAreDeterministic) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  auto run = [&] {
    runtime::Engine engine(m, {}, 4);
    return engine.run([](runtime::RankContext& ctx) {
      const runtime::GroupId g = ctx.new_group({0, 1, 2, 3});
      for (int i = 0; i < 50; ++i) {
        ctx.launch(gemm(64 * (1 + ctx.rank()), 4096, 4096), "aten::mm");
        ctx.collective(allreduce(4, 1 << 16), g, "nccl:all_reduce");
      }
      ctx.synchronize("end");
    });
  };
  const auto a = run();
  const auto b = run();
  EXPECT_EQ(a.end_ps, b.end_ps);
  EXPECT_EQ(a.events, b.events);
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].communication_ps, b.ranks[i].communication_ps);
    EXPECT_EQ(a.ranks[i].memory_bound_ps + a.ranks[i].compute_bound_ps,
              b.ranks[i].memory_bound_ps + b.ranks[i].compute_bound_ps);
  }
}

TEST(Engine, OutOfMemoryIsAResultNamingTheLargestHolders) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  const auto r = engine.run([](runtime::RankContext& ctx) {
    runtime::MemoryUseGuard weights(os::MemoryUse::weights);
    ctx.allocate(50ull << 30, os::MemoryUse::weights, "big.weight");
    ctx.allocate(20ull << 30, os::MemoryUse::weights, "medium.weight");
    ctx.allocate(20ull << 30, os::MemoryUse::kv_cache, "kv");
  });
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom->requested_for, "kv");
  ASSERT_GE(r.oom->largest.size(), 2u);
  EXPECT_EQ(r.oom->largest[0].first, "big.weight");
  EXPECT_EQ(r.oom->largest[1].first, "medium.weight");
  EXPECT_EQ(r.oom->memory.allocated_by_use[static_cast<std::size_t>(os::MemoryUse::weights)], 70ull << 30);
}

TEST(Engine, ACollectiveWithMismatchedSizesIsAnError) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  EXPECT_THROW(engine.run([](runtime::RankContext& ctx) {
                 ctx.collective(allreduce(2, ctx.rank() == 0 ? 1024 : 2048), ctx.new_group({0, 1}), "ar");
               }),
               std::logic_error);
}

TEST(Engine, AProgramWaitingOnAPeerThatNeverComesIsReported) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  try {
    engine.run([](runtime::RankContext& ctx) {
      const runtime::GroupId g = ctx.new_group({0, 1});
      if (ctx.rank() == 0) ctx.collective(allreduce(2, 1024), g, "ar");
      ctx.synchronize("end");
    });
    FAIL() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("stalled"), std::string::npos) << e.what();
  }
}

TEST(Engine, ProgramErrorsComeBackToTheCaller) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  EXPECT_THROW(engine.run([](runtime::RankContext&) { throw std::invalid_argument("shape mismatch"); }),
               std::invalid_argument);
}

TEST(Engine, MoreRanksThanDevicesIsAnInputError) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  EXPECT_THROW(runtime::Engine(m, {}, 2), InputError);
}

TEST(Engine, SendAndRecvPairUpAndMoveTheBytes) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  const auto r = engine.run([](runtime::RankContext& ctx) {
    if (ctx.rank() == 0) {
      ctx.launch(gemm(4096, 4096, 4096), "aten::mm");
      ctx.send(1, 64 << 20, "send");
    } else {
      ctx.recv(0, 64 << 20, "recv");
    }
    ctx.synchronize("end");
  });
  // The receive waits through the sender's GEMM (the send leaves once the GEMM is done); the
  // receiver's compute stream waits for the receive; both see the same transfer end.
  EXPECT_GT(r.ranks[1].p2p_ps, r.ranks[0].compute_bound_ps);
  EXPECT_GT(r.ranks[1].waiting_ps, r.ranks[0].compute_bound_ps);
  EXPECT_EQ(r.ranks[0].device_finish_ps, r.ranks[1].device_finish_ps);
}

}  // namespace
