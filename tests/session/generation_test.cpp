// End-to-end generation runs: the rules the issue states, checked on small models.

#include <gtest/gtest.h>

#include <filesystem>

#include "run_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/gpt.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/session/simulate.hpp"

namespace {

using namespace syntorch;
using session::RunSpec;

using session_testing::config;
using session_testing::model;

double matrix_flops(const session::RunReport& r) {
  double f = 0;
  for (const auto& rank : r.engine.ranks) {
    for (auto op : {runtime::OpKind::gemm, runtime::OpKind::bmm, runtime::OpKind::attention}) {
      f += rank.flops_by_op[static_cast<std::size_t>(op)];
    }
  }
  return f;
}

TEST(Generation, TensorParallelOneAndEightDoTheSameMatrixFlops) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  RunSpec spec;
  spec.model = model("gpt:layers=4,hidden=1024,heads=16,vocab=8192");  // vocab splits evenly: no padding
  spec.batch = 2;
  spec.input_tokens = 64;
  spec.output_tokens = 4;
  const auto one = session::simulate_generation(m, {}, spec);
  spec.tp = 8;
  const auto eight = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(one.oom);
  ASSERT_FALSE(eight.oom);
  EXPECT_GT(matrix_flops(one), 0);
  EXPECT_NEAR(matrix_flops(eight), matrix_flops(one), matrix_flops(one) * 1e-12);
  // and the tensor-parallel ranks really split it
  EXPECT_NEAR(eight.engine.ranks[3].flops_by_op[0] * 8, one.engine.ranks[0].flops_by_op[0],
              one.engine.ranks[0].flops_by_op[0] * 1e-12);
}

TEST(Generation, KvCacheIsTwoLayersBatchSeqHiddenBytesOverTp) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  for (int tp : {1, 2, 8}) {
    RunSpec spec;
    Diagnostics d;
    models::GPTConfig c = *models::parse_gpt_config("gpt3-1.3b", d, "test");
    c.heads = 16;  // 24 layers, d_model 2048 = 16 heads x 128: keys are d_model wide
    spec.model = std::make_shared<models::TransformerModel>(models::as_transformer(c));
    spec.tp = tp;
    spec.batch = 4;
    spec.input_tokens = 100;
    spec.output_tokens = 29;
    const auto r = session::simulate_generation(m, {}, spec);
    ASSERT_FALSE(r.oom);
    const std::uint64_t seq = 100 + 29 - 1;
    const std::uint64_t expected = 2ull * 24 * 4 * seq * 2048 * 2 / static_cast<std::uint64_t>(tp);
    for (const auto& rank : r.engine.ranks) {
      EXPECT_EQ(rank.memory.peak_allocated_by_use[static_cast<std::size_t>(os::MemoryUse::kv_cache)], expected)
          << "tp " << tp << " rank " << rank.rank;
    }
  }
}

TEST(Generation, BatchOneDecodeIsMemoryBoundOnEveryBundledDevice) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs")) {
    if (entry.path().extension() != ".json") continue;
    const hw::Machine m = hw::Machine::load(entry.path().string());
    RunSpec spec;
    spec.model = model("gpt3-350m");
    spec.batch = 1;
    spec.input_tokens = 1;  // nothing but decode steps
    spec.output_tokens = 16;
    spec.dtype = DType::bf16;  // the one every bundled device runs
    spec.framework = runtime::Framework::native;
    const auto r = session::simulate_generation(m, {}, spec);
    ASSERT_FALSE(r.oom) << entry.path();
    const auto& rank = r.engine.ranks[0];
    EXPECT_GT(rank.memory_bound_ps, 2 * rank.compute_bound_ps) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(Generation, ATinyHbmGivesAnOomResultNamingTheLargestConsumers) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"), {{"/components/gpu/components/hbm/size", "1 GB"}});
  RunSpec spec;
  spec.model = model("gpt3-1.3b");
  const auto r = session::simulate_generation(m, {}, spec);
  ASSERT_TRUE(r.oom);
  ASSERT_TRUE(r.engine.oom);
  const auto& oom = *r.engine.oom;
  EXPECT_EQ(oom.memory.capacity_bytes, 1000000000u);
  EXPECT_GT(oom.memory.allocated_by_use[static_cast<std::size_t>(os::MemoryUse::weights)], 500000000u);
  ASSERT_FALSE(oom.largest.empty());
  EXPECT_GE(oom.largest[0].second, oom.largest.back().second);
  EXPECT_GT(oom.largest[0].second, 0u);
}

TEST(Generation, TwoPipelineStagesShowTheBubbleInPerStageBusyTime) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  auto busy_fraction = [&](std::int64_t micro_batches) {
    RunSpec spec;
    spec.model = model("gpt3-1.3b");
    spec.pp = 2;
    spec.batch = 8;
    spec.input_tokens = 512;
    spec.output_tokens = 1;  // the prefill alone: where the pipeline fills and drains
    spec.micro_batches = micro_batches;
    spec.framework = runtime::Framework::native;
    const auto r = session::simulate_generation(m, {}, spec);
    EXPECT_FALSE(r.oom);
    std::vector<double> busy;
    for (const auto& rank : r.engine.ranks) {
      busy.push_back(static_cast<double>(rank.compute_bound_ps + rank.memory_bound_ps) / static_cast<double>(r.engine.end_ps));
    }
    return busy;
  };
  const auto one = busy_fraction(1);
  const auto four = busy_fraction(4);
  // One micro-batch: each stage works while the other waits, about half the time.
  EXPECT_LT(one[0], 0.6);
  EXPECT_LT(one[1], 0.6);
  // Four micro-batches overlap the stages: the bubble shrinks to (p-1)/(m+p-1) = 1/5.
  EXPECT_GT(four[0], one[0] + 0.15);
  EXPECT_GT(four[1], one[1] + 0.15);
}

TEST(Generation, PipelineStagesPassActivationsAndTokensThroughEveryStep) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  for (bool graph : {false, true}) {
    RunSpec spec;
    spec.model = model("gpt3-1.3b");
    spec.tp = 2;
    spec.pp = 4;
    spec.batch = 8;
    spec.input_tokens = 32;
    spec.output_tokens = 5;
    spec.graph = graph;
    const auto r = session::simulate_generation(m, {}, spec);
    ASSERT_FALSE(r.oom);
    for (const auto& rank : r.engine.ranks) {
      EXPECT_EQ(rank.steps.size(), 5u) << rank.rank;
      // activations in, activations or tokens out, on every stage
      EXPECT_GT(rank.p2p_ps, 0u) << rank.rank;
    }
    EXPECT_GT(r.tpot_s, 0);
  }
}

TEST(Generation, GraphModeRemovesPerKernelLaunchCostInALaunchBoundDecode) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  RunSpec spec;
  spec.model = model("gpt3-125m");
  spec.batch = 1;
  spec.input_tokens = 8;
  spec.output_tokens = 32;
  const auto eager = session::simulate_generation(m, {}, spec);
  spec.graph = true;
  const auto graph = session::simulate_generation(m, {}, spec);
  // Eager: the host is the bottleneck (the device idles between kernels).
  EXPECT_GT(eager.breakdown.idle_s, eager.breakdown.memory_s + eager.breakdown.compute_s);
  EXPECT_LT(graph.tpot_s, 0.5 * eager.tpot_s);
  EXPECT_LT(graph.breakdown.idle_s, 0.5 * eager.breakdown.idle_s);
  // The same kernels run either way.
  EXPECT_EQ(graph.engine.ranks[0].kernels, eager.engine.ranks[0].kernels);
}

TEST(Generation, ReportsAreConsistent) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  RunSpec spec;
  spec.model = model("gpt3-2.7b");
  spec.tp = 2;
  spec.batch = 4;
  spec.input_tokens = 256;
  spec.output_tokens = 8;
  const auto r = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(r.oom);
  EXPECT_GT(r.ttft_s, 0);
  EXPECT_NEAR(r.e2e_s, r.ttft_s + 7 * r.tpot_s, 1e-12);
  EXPECT_NEAR(r.tokens_per_s, 4 * 8 / r.e2e_s, 1e-9);
  EXPECT_GT(r.mfu, 0);
  EXPECT_LT(r.mfu, 1);
  ASSERT_EQ(r.peak_memory_bytes.size(), 2u);
  // Weights alone: 2.7B parameters in fp16 over 2 ranks.
  EXPECT_GT(r.peak_memory_bytes[0], static_cast<std::uint64_t>(spec.model->parameters() * 2 / 2 * 0.95));
  const auto& b = r.breakdown;
  EXPECT_NEAR(b.compute_s + b.memory_s + b.communication_s + b.waiting_s + b.idle_s, r.e2e_s, r.e2e_s * 1e-9);
  EXPECT_EQ(r.engine.ranks[0].steps.size(), 8u);
}

TEST(Generation, InvalidLayoutsAreInputErrors) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  RunSpec spec;
  spec.model = model("gpt3-125m");
  spec.tp = 16;
  EXPECT_THROW(session::simulate_generation(m, {}, spec), InputError);
  spec.tp = 8;  // 12 heads do not split over 8
  Diagnostics d;
  EXPECT_FALSE(session::validate_run(spec, m, d, "flags"));
  EXPECT_NE(d.to_string().find("12 heads"), std::string::npos) << d.to_string();
}

}  // namespace

namespace {
TEST(Generation, TheNpuWhatIfRunsTensorParallelOverItsRing) {
  const hw::Machine m = hw::Machine::load(config("npu_systolic_4x.json"));
  RunSpec spec;
  spec.model = model("gpt3-350m");
  spec.tp = 4;
  spec.dtype = DType::bf16;
  spec.input_tokens = 64;
  spec.output_tokens = 4;
  const auto r = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(r.oom);
  EXPECT_GT(r.breakdown.communication_s, 0);
  for (const auto& rank : r.engine.ranks) EXPECT_GT(rank.collectives, 0u);
}
}  // namespace
