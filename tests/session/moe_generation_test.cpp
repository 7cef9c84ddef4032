// Generation with mixture-of-experts models: experts over the tensor-parallel ranks or spread by
// expert parallelism with all-to-all, routing imbalance that loads the hot experts' rank, layouts
// that do not fit named by flag, and a Mixtral config.json that runs as the zoo's Mixtral.

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "run_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/session/simulate.hpp"

namespace {

using namespace syntorch;
using session::RunSpec;
using session_testing::config;
using session_testing::model;

const char* kSmallMoe = "llama:layers=2,hidden=1024,heads=8,kv_heads=8,ffn=2048,vocab=1000,experts=8,top_k=2";

RunSpec small_run(int ep, double skew = 0) {
  RunSpec spec;
  spec.model = model(kSmallMoe);
  spec.tp = 8;
  spec.ep = ep;
  spec.expert_skew = skew;
  spec.batch = 4;
  spec.input_tokens = 256;
  spec.output_tokens = 4;
  return spec;
}

TEST(MoeGeneration, ExpertParallelismHoldsWholeExpertsAndExchangesTokensByAllToAll) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const auto tp = session::simulate_generation(m, {}, small_run(1));
  const auto ep = session::simulate_generation(m, {}, small_run(8));
  ASSERT_FALSE(tp.oom);
  ASSERT_FALSE(ep.oom);
  // The same expert weights per rank: one whole expert, or an eighth of each.
  EXPECT_EQ(session_testing::peak_bytes(tp, 0, os::MemoryUse::weights),
            session_testing::peak_bytes(ep, 0, os::MemoryUse::weights));
  // Per layer and step: TP has an all-reduce after attention and after the experts; EP a
  // reduce-scatter, two all-to-alls and an all-gather.
  const std::uint64_t steps = 4, layers = 2;
  const std::uint64_t tp_extra = tp.engine.ranks[0].collectives - steps * layers * 2;
  const std::uint64_t ep_extra = ep.engine.ranks[0].collectives - steps * layers * 4;
  EXPECT_EQ(tp_extra, ep_extra);  // the rest (embedding, head) is the same in both
  EXPECT_GT(ep.ttft_s, 0);
  EXPECT_GT(ep.tpot_s, 0);
}

TEST(MoeGeneration, BalancedDecodeKeepsEveryExpertRankBusyAndRoutesNoPadding) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  // Decode of 8 sequences over tp 8 = ep 8: one token per rank, two experts each; every rank's
  // expert gets two rows, so every rank runs the same kernels.
  RunSpec eight = small_run(8);
  eight.batch = 8;
  const auto r = session::simulate_generation(m, {}, eight);
  ASSERT_FALSE(r.oom);
  for (const auto& rank : r.engine.ranks) EXPECT_EQ(rank.kernels, r.engine.ranks[0].kernels);
  // One sequence: seven ranks' shares are padding, which is not routed: they run no expert GEMMs.
  RunSpec one = small_run(8);
  one.batch = 1;
  const auto s = session::simulate_generation(m, {}, one);
  ASSERT_FALSE(s.oom);
  EXPECT_LT(s.engine.ranks[7].kernels, s.engine.ranks[0].kernels);
}

TEST(MoeGeneration, ExpertTensorParallelAndPipelineLayoutsRun) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  // ep < tp: each expert split over tp / ep ranks that pool their tokens (uneven pools padded);
  // one decode token: a rank whose only token's experts are its own sends nothing over a link.
  for (const auto& [tp, ep, pp, skew] : std::vector<std::tuple<int, int, int, double>>{
           {8, 4, 1, 0}, {8, 2, 1, 2}, {4, 2, 2, 0}, {8, 2, 1, 16}, {2, 2, 1, 0}}) {
    RunSpec spec = small_run(ep, skew);
    spec.tp = tp;
    spec.pp = pp;
    spec.batch = 1;
    spec.input_tokens = 33;
    spec.output_tokens = 3;
    const auto r = session::simulate_generation(m, {}, spec);
    EXPECT_FALSE(r.oom);
    EXPECT_GT(r.tpot_s, 0) << "tp " << tp << " ep " << ep << " pp " << pp << " skew " << skew;
  }
}

TEST(MoeGeneration, SkewedRoutingLoadsTheHotExpertsRank) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  RunSpec balanced = small_run(8);
  balanced.batch = 16;
  balanced.input_tokens = 1024;
  RunSpec skewed = balanced;
  skewed.expert_skew = 1.5;
  const auto b = session::simulate_generation(m, {}, balanced);
  const auto s = session::simulate_generation(m, {}, skewed);
  // Rank 0 holds expert 0, which now gets the most tokens: everyone waits for it.
  EXPECT_GT(s.ttft_s, 1.2 * b.ttft_s);
  EXPECT_GT(s.engine.ranks[7].waiting_ps, b.engine.ranks[7].waiting_ps);
}

TEST(MoeGeneration, LayoutsThatDoNotFitAreNamedByFlag) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  auto problems = [&](RunSpec spec) {
    Diagnostics d;
    EXPECT_FALSE(session::validate_run(spec, m, d, "flags"));
    return d.to_string();
  };
  RunSpec dense = small_run(2);
  dense.model = model("llama:layers=2,hidden=1024,heads=8,ffn=2048,vocab=1000");
  EXPECT_NE(problems(dense).find("flags:ep: "), std::string::npos);
  EXPECT_NE(problems(dense).find("no experts to spread over ep 2"), std::string::npos);
  EXPECT_NE(problems(small_run(3)).find("ep 3 must divide tp 8"), std::string::npos);
  RunSpec four = small_run(8);
  four.model = model("llama:layers=2,hidden=1024,heads=8,ffn=2048,vocab=1000,experts=4,top_k=1");
  EXPECT_NE(problems(four).find("4 experts do not split over ep 8"), std::string::npos);
  RunSpec skew = small_run(8, -1);
  EXPECT_NE(problems(skew).find("flags:expert-skew: "), std::string::npos);
  Diagnostics d;
  RunSpec parsed;
  EXPECT_TRUE(session::set_run_parameter(parsed, "expert_skew", "lots", d, "row 3"));  // a key it knows...
  EXPECT_FALSE(d.empty());                                                              // ...with a bad value
  EXPECT_NE(d.to_string().find("row 3:expert_skew: expected a Zipf exponent"), std::string::npos) << d.to_string();
}

TEST(RunParameters, EveryListedKeyIsOneTheSetterTakes) {
  // Studies and measurement rows accept exactly these keys; the setter must know each.
  const std::map<std::string, std::string> values{{"model", "gpt3-125m"}, {"dtype", "bf16"}, {"kv_dtype", "fp8"},
                                                  {"cuda_graphs", "true"},{"framework", "eager"}, {"expert_skew", "0.5"},
                                                  {"ranks", "one"}};
  for (const std::string& key : session::run_parameter_keys()) {
    RunSpec spec;
    Diagnostics d;
    const auto v = values.find(key);
    EXPECT_TRUE(session::set_run_parameter(spec, key, v != values.end() ? v->second : "2", d, "test")) << key;
    EXPECT_TRUE(d.empty()) << key << ": " << d.to_string();
  }
  RunSpec spec;
  Diagnostics d;
  EXPECT_FALSE(session::set_run_parameter(spec, "hw", "x", d, "test"));  // the machine is not a run parameter
}

TEST(MoeGeneration, TheMixtralConfigJsonRunsAsTheZoosMixtral) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  RunSpec zoo;
  zoo.model = model("mixtral-8x7b");
  zoo.tp = 8;
  zoo.ep = 8;
  zoo.batch = 2;
  zoo.input_tokens = 64;
  zoo.output_tokens = 3;
  RunSpec file = zoo;
  file.model = model(std::string(SYNTORCH_SOURCE_DIR) + "/models/mixtral-8x7b/config.json");
  const auto a = session::simulate_generation(m, {}, zoo);
  const auto b = session::simulate_generation(m, {}, file);
  EXPECT_EQ(a.ttft_s, b.ttft_s);
  EXPECT_EQ(a.tpot_s, b.tpot_s);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  // 46.7 B weights in fp16 over 8 ranks, no more than 12 GB each.
  EXPECT_NEAR(static_cast<double>(session_testing::peak_bytes(a, 0, os::MemoryUse::weights)), 46.7e9 * 2 / 8,
              0.02 * 46.7e9 * 2 / 8);
}

TEST(MoeGeneration, Fp8ExpertsHalveTheirWeightsAndSpeedUpDecode) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  RunSpec fp16;
  fp16.model = model("mixtral-8x7b");
  fp16.tp = 8;
  fp16.batch = 8;
  fp16.input_tokens = 128;
  fp16.output_tokens = 8;
  fp16.framework = runtime::Framework::native;
  fp16.graph = true;
  RunSpec fp8 = fp16;
  fp8.dtype = DType::fp8;
  const auto a = session::simulate_generation(m, {}, fp16);
  const auto b = session::simulate_generation(m, {}, fp8);
  const double w16 = static_cast<double>(session_testing::peak_bytes(a, 0, os::MemoryUse::weights));
  const double w8 = static_cast<double>(session_testing::peak_bytes(b, 0, os::MemoryUse::weights));
  EXPECT_LT(w8, 0.6 * w16);
  // Decode streams the experts' weights, in half the bytes; the small kernels around them
  // (norms, routing, permutation, the fp8 casts) keep their cost.
  EXPECT_LT(b.tpot_s, 0.9 * a.tpot_s);
}

}  // namespace
