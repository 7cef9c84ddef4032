// session::Run: what a program-driven run is made of is checked before it runs, it runs once,
// and its stats say what it measured.

#include <gtest/gtest.h>

#include <stdexcept>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/session/run.hpp"
#include "syntorch/torch/torch.hpp"

namespace {

using namespace syntorch;

session::RunOptions h100() {
  session::RunOptions o;
  o.hw = std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/h100_sxm5_80gb.json";
  return o;
}

TEST(Run, AnAttachedProgramsOpsAreSimulatedAndTheRunRunsOnce) {
  session::Run run(h100());
  run.attach();
  const torch::Tensor a = torch::randn({256, 1024}, torch::kFloat16);
  const torch::Tensor b = torch::randn({1024, 1024}, torch::kFloat16);
  (void)torch::matmul(a, b);
  const session::RunStats s = run.finish();
  EXPECT_TRUE(run.finished());
  EXPECT_GE(s.kernels, 3u);  // two fills and the GEMM
  EXPECT_GT(s.flops, 2.0 * 256 * 1024 * 1024 - 1);
  EXPECT_GT(s.simulated_time_s, 0);
  EXPECT_EQ(s.peak_memory_bytes.size(), 1u);
  EXPECT_EQ(run.finish().kernels, s.kernels);  // the same answer again
  EXPECT_THROW(run.attach(), std::logic_error);
  EXPECT_THROW(run.run_programs(1, [](int) {}, false), std::logic_error);
}

TEST(Run, ProgramsPerRankRunOnceAndBadSetupIsRefusedFirst) {
  session::RunOptions o = h100();
  session::Run run(o);
  const session::RunStats s = run.run_programs(1, [](int) {
    (void)torch::gelu(torch::randn({1024, 1024}, torch::kFloat16));
  }, false);
  EXPECT_GE(s.kernels, 2u);
  EXPECT_THROW(run.run_programs(1, [](int) {}, false), std::logic_error);
  o.framework = "jax";
  EXPECT_THROW(session::Run bad(o), std::invalid_argument);
  o.framework = "eager";
  o.sets = {"/components/gpu/count=0"};
  EXPECT_THROW(session::Run bad(o), InputError);
}

}  // namespace
