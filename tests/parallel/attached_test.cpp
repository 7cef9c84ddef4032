// An attached program: the test's own thread issues torch ops (as a Python script does) while the
// engine simulates them on a thread of its own.

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/torch.hpp"

namespace syntorch {
namespace {

std::string config_path(const std::string& name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / (name + ".json")).string();
}

TEST(AttachedEngine, TheCallersOwnOpsAreSimulatedAsARunsAre) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  auto program = [] {
    const auto a = torch::empty({512, 1024}, torch::kFloat16);
    const auto b = torch::empty({1024, 2048}, torch::kFloat16);
    for (int i = 0; i < 10; ++i) torch::matmul(a, b);
  };
  runtime::Engine attached(m, {}, 1);
  attached.attach();
  program();
  const runtime::EngineResult got = attached.detach();
  runtime::Engine threaded(m, {}, 1);
  const runtime::EngineResult want = threaded.run([&](runtime::RankContext&) { program(); });
  ASSERT_EQ(got.ranks.size(), 1u);
  EXPECT_EQ(got.ranks[0].kernels, 10u);
  EXPECT_DOUBLE_EQ(got.ranks[0].flops, 10 * 2.0 * 512 * 1024 * 2048);
  EXPECT_EQ(got.end_ps, want.end_ps);  // the same simulation, whichever thread issued it
  EXPECT_EQ(got.events, want.events);
  EXPECT_EQ(runtime::current_rank(), nullptr);  // detach gave the thread back
}

TEST(AttachedEngine, AnEngineLeftAttachedStopsCleanly) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  std::thread t([&] {
    runtime::Engine e(m, {}, 1);
    e.attach();
    torch::empty({16, 16}, torch::kFloat16).fill_(1.0);
  });  // destroyed without detach, its simulation joined
  t.join();
  EXPECT_EQ(runtime::current_rank(), nullptr);
}

TEST(AttachedEngine, AnOpTheDeviceRefusesCanBeIssuedAgainAndAPolicyChangesLaterOps) {
  // A Python program catches errors and carries on: the refused op leaves no half-lowered entry,
  // and set_policy lowers later ops by the new policy while earlier kernels stay valid.
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  runtime::Engine e(m, {}, 1);
  e.attach();
  const auto q = torch::empty({1, 8, 128, 64}, torch::kFloat16);
  torch::scaled_dot_product_attention(q, q, q);  // auto: runs
  Diagnostics d;
  runtime::current_rank()->set_policy(runtime::KernelPolicy::parse("attention=flash_v3", d));
  for (int i = 0; i < 2; ++i) EXPECT_THROW(torch::scaled_dot_product_attention(q, q, q), InputError);
  runtime::current_rank()->set_policy(runtime::KernelPolicy{});
  torch::scaled_dot_product_attention(q, q, q);
  const runtime::EngineResult r = e.detach();
  EXPECT_EQ(r.ranks[0].kernels, 2u);
}

}  // namespace
}  // namespace syntorch
