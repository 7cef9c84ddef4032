// The host clock a program reads: where its host is when it asks, sleeps until a time, events
// queried at the host's time, and programs that decide what to run from it, run after run the same.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/engine.hpp"
#include "predict_helpers.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;
using runtime_testing::collective;
using runtime_testing::config;
using runtime_testing::gemm;

TEST(HostClock, ReadsWhereTheHostIsNotWhereTheDeviceIs) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  double start = -1, launched = -1, synced = -1;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    start = ctx.host_time_s();
    ctx.launch(gemm(8192, 8192, 8192), "aten::mm");  // milliseconds on the device
    launched = ctx.host_time_s();
    ctx.synchronize("end");
    synced = ctx.host_time_s();
  });
  EXPECT_EQ(start, 0.0);
  // The launch costs the host microseconds; the host goes on while the device works.
  EXPECT_GT(launched, 0.0);
  EXPECT_LT(launched, 1e-4);
  EXPECT_GT(synced, 1e-3);
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_GE(synced, static_cast<double>(r.ranks[0].device_finish_ps) * 1e-12);
  EXPECT_NEAR(synced, static_cast<double>(r.ranks[0].host_finish_ps) * 1e-12, 1e-6);  // the read's own cost after
}

TEST(HostClock, SleepUntilIdlesTheHostUntilThen) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  std::vector<double> times;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    ctx.sleep_until_s(0.25);
    times.push_back(ctx.host_time_s());
    ctx.sleep_until_s(0.1);  // passed: no wait
    times.push_back(ctx.host_time_s());
  });
  ASSERT_EQ(times.size(), 2u);
  EXPECT_DOUBLE_EQ(times[0], 0.25);
  // The first reading's own cost (100 ns) is all that passed; sleeping is not dispatching.
  EXPECT_NEAR(times[1], 0.25 + 100e-9, 1e-12);
  EXPECT_EQ(r.ranks[0].host_busy_ps, 2 * 100'000u);
}

TEST(HostClock, AnEventIsCompleteOnlyOnceTheDeviceHasReachedIt) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  std::vector<double> seen;
  std::vector<bool> idle;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    idle.push_back(ctx.stream_idle(0));
    seen.push_back(ctx.event_time_s(0));  // never recorded: complete, as in CUDA
    const std::uint64_t start = ctx.record_event(0);
    ctx.launch(gemm(8192, 8192, 8192), "aten::mm");
    const std::uint64_t done = ctx.record_event(0);
    seen.push_back(ctx.event_time_s(done));
    idle.push_back(ctx.stream_idle(0));
    ctx.sleep_until_s(1.0);  // far past the GEMM
    seen.push_back(ctx.event_time_s(done));
    seen.push_back(ctx.event_time_s(start));
    idle.push_back(ctx.stream_idle(0));
  });
  EXPECT_EQ(idle, (std::vector<bool>{true, false, true}));
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], 0.0);
  EXPECT_TRUE(std::isnan(seen[1]));
  // Between the two records: the GEMM's time on the device and the launch gap before it, as
  // cudaEventElapsedTime reads it.
  const double kernel_s = static_cast<double>(r.ranks[0].compute_bound_ps + r.ranks[0].memory_bound_ps) * 1e-12;
  EXPECT_GT(kernel_s, 1e-3);
  EXPECT_GE(seen[2] - seen[3], kernel_s);
  EXPECT_LT(seen[2] - seen[3], kernel_s + 50e-6);
  EXPECT_LT(seen[2], 1.0);
}

// A scheduler's loop: it launches work while the clock says there is time left, so what it runs
// depends on simulated time. Every run makes the same choices.
TEST(HostClock, ProgramsDecidingFromTheClockRunTheSameEveryTime) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  auto run = [&](std::vector<int>& steps) {
    runtime::Engine engine(m, {}, 4);
    steps.assign(4, 0);
    return engine.run([&](runtime::RankContext& ctx) {
      const runtime::GroupId g = ctx.new_group({0, 1, 2, 3});
      int n = 0;
      // Ranks of different speeds meet in each all-reduce, so each one's clock depends on the others.
      while (ctx.host_time_s() < 2e-3) {
        ctx.launch(gemm(128 * (1 + ctx.rank() % 2), 4096, 4096), "aten::mm");
        ctx.collective(collective(OpKind::allreduce, 4, 1 << 18), g, "nccl:all_reduce");
        if (++n % 4 == 0) ctx.synchronize("step");
        if (n > 10000) break;
      }
      ctx.synchronize("end");
      steps[static_cast<std::size_t>(ctx.rank())] = n;
    });
  };
  std::vector<int> a_steps, b_steps;
  const auto a = run(a_steps);
  const auto b = run(b_steps);
  EXPECT_GT(a_steps[0], 4);
  EXPECT_LT(a_steps[0], 10000);
  EXPECT_EQ(a_steps, b_steps);
  EXPECT_EQ(a.end_ps, b.end_ps);
  EXPECT_EQ(a.events, b.events);
}

// Polling, as CUDA programs do: each query costs the host an API call, so the loop reaches the
// event's completion instead of asking at the same instant for ever.
TEST(HostClock, APollingLoopReachesTheEvent) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  int polls = 0;
  double seen_s = 0;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    ctx.launch(gemm(4096, 4096, 4096), "aten::mm");
    const std::uint64_t done = ctx.record_event(0);
    while (std::isnan(ctx.event_time_s(done)) && polls < 1'000'000) ++polls;
    while (!ctx.stream_idle(0) && polls < 1'000'000) ++polls;
    const double until_s = ctx.host_time_s() + 1e-4;
    while (ctx.host_time_s() < until_s) ++polls;
    seen_s = ctx.host_time_s();
  });
  EXPECT_GT(polls, 10);
  EXPECT_LT(polls, 1'000'000);
  EXPECT_GE(seen_s, static_cast<double>(r.ranks[0].device_finish_ps) * 1e-12);
}

TEST(HostClock, BadTimesAndCapturesAreRefused) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  auto refuses = [&](auto&& program) {
    runtime::Engine engine(m, {}, 1);
    return engine.run(program);
  };
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) { ctx.sleep_until_s(std::nan("")); }), std::invalid_argument);
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) { ctx.sleep_until_s(-1); }), std::invalid_argument);
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) { ctx.sleep_until_s(1e300); }), std::invalid_argument);
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) { ctx.event_time_s(7); }), std::invalid_argument);
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) { ctx.stream_idle(99); }), std::invalid_argument);
  EXPECT_THROW(refuses([](runtime::RankContext& ctx) {
                 ctx.graph_begin();
                 ctx.host_time_s();
               }),
               std::logic_error);
}

// A program waiting for the clock after its peer's program failed is let go when the simulation
// can go no further, not left hanging.
TEST(HostClock, AWaitingProgramIsReleasedWhenTheRunFails) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  EXPECT_THROW(engine.run([](runtime::RankContext& ctx) {
                 const runtime::GroupId g = ctx.new_group({0, 1});
                 if (ctx.rank() == 1) throw std::runtime_error("rank 1 fails");
                 ctx.collective(collective(OpKind::allreduce, 2, 1 << 20), g, "nccl:all_reduce");  // rank 1 never joins
                 ctx.synchronize("wait for it");
                 ctx.host_time_s();  // the host never gets here
               }),
               std::runtime_error);
}

}  // namespace
