// Generation with the Llama-family models: the KV cache sized by K/V heads, a config.json that
// runs exactly as its zoo model, GPT-J's parallel blocks over tensor and pipeline parallelism.

#include <gtest/gtest.h>

#include "run_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/models/transformer.hpp"
#include "syntorch/session/simulate.hpp"

namespace {

using namespace syntorch;
using session::RunSpec;

using session_testing::config;
using session_testing::model;

std::uint64_t kv_cache_bytes(const session::RunReport& r, std::size_t rank) {
  return session_testing::peak_bytes(r, rank, os::MemoryUse::kv_cache);
}

TEST(TransformerGeneration, TheKvCacheHoldsKvHeadsNotQueryHeads) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  for (const auto& [kv_heads, tp] : std::vector<std::pair<int, int>>{{8, 1}, {2, 1}, {2, 2}, {2, 8}, {1, 4}}) {
    RunSpec spec;
    spec.model = model("llama:layers=4,hidden=1024,heads=8,kv_heads=" + std::to_string(kv_heads) +
                       ",ffn=2816,vocab=4096");
    spec.tp = tp;
    spec.batch = 3;
    spec.input_tokens = 100;
    spec.output_tokens = 5;
    const auto r = session::simulate_generation(m, {}, spec);
    ASSERT_FALSE(r.oom);
    const std::uint64_t local_kv_heads = std::max(1, kv_heads / tp);  // replicated past tp = kv_heads
    const std::uint64_t expected = 2ull * 4 * 3 * (100 + 5 - 1) * local_kv_heads * 128 * 2;
    for (std::size_t rank = 0; rank < r.engine.ranks.size(); ++rank) {
      EXPECT_EQ(kv_cache_bytes(r, rank), expected) << "kv_heads " << kv_heads << " tp " << tp << " rank " << rank;
    }
  }
}

TEST(TransformerGeneration, AConfigJsonRunsExactlyAsItsZooModel) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  RunSpec spec;
  spec.batch = 2;
  spec.input_tokens = 64;
  spec.output_tokens = 3;
  spec.model = model("llama3-8b");
  const auto zoo = session::simulate_generation(m, {}, spec);
  spec.model = model(std::string(SYNTORCH_SOURCE_DIR) + "/models/llama3-8b/config.json");
  const auto json = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(zoo.oom);
  EXPECT_EQ(zoo.e2e_s, json.e2e_s);
  EXPECT_EQ(zoo.ttft_s, json.ttft_s);
  EXPECT_EQ(zoo.peak_memory_bytes, json.peak_memory_bytes);
  // 8.03 B weights in fp16 on the one device, and the 128256-token head is not tied.
  EXPECT_GT(zoo.peak_memory_bytes[0], 16.0e9);
}

TEST(TransformerGeneration, GptjParallelBlocksRunOverTensorAndPipelineParallel) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  RunSpec spec;
  spec.model = model("gptj-6b");
  spec.batch = 4;
  spec.input_tokens = 128;
  spec.output_tokens = 4;
  spec.tp = 2;
  spec.pp = 2;
  const auto r = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(r.oom);
  ASSERT_EQ(r.engine.ranks.size(), 4u);
  EXPECT_GT(r.tpot_s, 0);
  // Each rank holds about a quarter of the 6.05 B weights in fp16.
  for (const auto bytes : r.peak_memory_bytes) {
    EXPECT_GT(static_cast<double>(bytes), 0.2 * 6.05e9 * 2);
    EXPECT_LT(static_cast<double>(bytes), 0.4 * 6.05e9 * 2);
  }
}

TEST(TransformerGeneration, PositionsPastTheTrainedContextRunButNotPastASlidingWindow) {
  models::TransformerConfig c = dynamic_cast<const models::TransformerModel&>(*model("mistral-7b")).config();
  Diagnostics d;
  models::TransformerModel(c).check({1, 1, 1, 40000}, d, "flags");
  EXPECT_TRUE(d.empty()) << d.to_string();  // rotary: past the trained 32768, as on real hardware
  c.sliding_window = 4096;                  // Mistral 7B v0.1
  models::TransformerModel(c).check({1, 1, 1, 5000}, d, "flags");
  EXPECT_NE(d.to_string().find("sliding window of 4096 positions"), std::string::npos) << d.to_string();
  // Learned positions too, as GPT-3 has always run (the report notes it): one rule for every model.
  Diagnostics learned;
  model(std::string(SYNTORCH_SOURCE_DIR) + "/models/gpt2")->check({1, 1, 1, 1026}, learned, "flags");
  EXPECT_TRUE(learned.empty()) << learned.to_string();
}

TEST(TransformerGeneration, Fp8HalvesLinearWeightsAndTheKvCacheAndRunsTheGemmsInFp8) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  RunSpec spec;
  spec.model = model("llama:layers=4,hidden=1024,heads=8,kv_heads=2,ffn=2816,vocab=4096");
  spec.batch = 4;
  spec.input_tokens = 200;
  spec.output_tokens = 8;
  const auto fp16 = session::simulate_generation(m, {}, spec);
  spec.dtype = DType::fp8;
  const auto fp8 = session::simulate_generation(m, {}, spec);
  spec.kv_dtype = DType::fp16;
  const auto fp8_fp16_kv = session::simulate_generation(m, {}, spec);
  ASSERT_FALSE(fp16.oom || fp8.oom || fp8_fp16_kv.oom);
  auto use = [](const session::RunReport& r, os::MemoryUse u) { return session_testing::peak_bytes(r, 0, u); };
  EXPECT_EQ(use(fp8, os::MemoryUse::kv_cache) * 2, use(fp16, os::MemoryUse::kv_cache));
  EXPECT_EQ(use(fp8_fp16_kv, os::MemoryUse::kv_cache), use(fp16, os::MemoryUse::kv_cache));
  // The Linear weights halve; the embedding (4096 x 1024) and norms stay 16-bit.
  const double linear_weights = 4.0 * (1024 * (1024 + 2 * 256) + 1024 * 1024 + 3 * 1024 * 2816) + 1024.0 * 4096;
  EXPECT_NEAR(static_cast<double>(use(fp16, os::MemoryUse::weights) - use(fp8, os::MemoryUse::weights)),
              linear_weights, 0.05 * linear_weights);  // the allocator rounds each block
  // Each Linear adds one kernel, its input's cast to fp8: on this small model that makes fp8
  // slower; a GEMM-bound prefill is faster at the fp8 rate.
  EXPECT_GT(fp8.engine.ranks[0].kernels, fp16.engine.ranks[0].kernels);
  RunSpec big;
  big.model = model("llama:layers=2,hidden=8192,heads=64,kv_heads=8,ffn=28672,vocab=32000");
  big.batch = 4;
  big.input_tokens = 2048;
  big.output_tokens = 1;
  const double fp16_prefill = session::simulate_generation(m, {}, big).ttft_s;
  big.dtype = DType::fp8;
  const double fp8_prefill = session::simulate_generation(m, {}, big).ttft_s;
  EXPECT_LT(fp8_prefill, 0.8 * fp16_prefill);

  Diagnostics d;
  spec.dtype = DType::fp32;
  spec.kv_dtype = DType::fp8;
  EXPECT_FALSE(session::validate_run(spec, m, d, "flags"));
  EXPECT_NE(d.to_string().find("a fp8 KV cache in a fp32 run"), std::string::npos) << d.to_string();
}

}  // namespace

namespace {

TEST(TransformerGeneration, MaxNumTokensRunsThePrefillInGroupsWithSmallerActivations) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  RunSpec whole;
  whole.model = model("llama:layers=4,hidden=1024,heads=8,kv_heads=2,ffn=2816,vocab=4096");
  whole.batch = 16;
  whole.input_tokens = 512;
  whole.output_tokens = 4;
  RunSpec grouped = whole;
  grouped.max_num_tokens = 2048;  // 4 sequences per prefill forward
  RunSpec roomy = whole;
  roomy.max_num_tokens = 16 * 512;  // the whole batch fits: the same run
  const auto a = session::simulate_generation(m, {}, whole);
  const auto b = session::simulate_generation(m, {}, grouped);
  const auto c = session::simulate_generation(m, {}, roomy);
  EXPECT_EQ(a.ttft_s, c.ttft_s);
  EXPECT_EQ(a.peak_memory_bytes, c.peak_memory_bytes);
  const auto activations = [](const session::RunReport& r) {
    return session_testing::peak_bytes(r, 0, os::MemoryUse::activations);
  };
  EXPECT_LT(static_cast<double>(activations(b)), 0.4 * static_cast<double>(activations(a)));
  EXPECT_EQ(session_testing::peak_bytes(b, 0, os::MemoryUse::kv_cache),
            session_testing::peak_bytes(a, 0, os::MemoryUse::kv_cache));
  EXPECT_GT(b.ttft_s, a.ttft_s);  // four forwards instead of one: weights read four times
  EXPECT_NEAR(b.tpot_s, a.tpot_s, 1e-12);  // decode is the same (to the rounding of e2e - ttft)
  Diagnostics d;
  RunSpec bad = whole;
  bad.max_num_tokens = -1;
  EXPECT_FALSE(session::validate_run(bad, m, d, "flags"));
  EXPECT_NE(d.to_string().find("flags:max-num-tokens: "), std::string::npos) << d.to_string();
  Diagnostics short_budget;
  bad.max_num_tokens = 511;  // less than one 512-token prompt
  EXPECT_FALSE(session::validate_run(bad, m, short_budget, "flags"));
  EXPECT_NE(short_budget.to_string().find("cannot hold one prompt of 512"), std::string::npos) << short_budget.to_string();
}

}  // namespace
