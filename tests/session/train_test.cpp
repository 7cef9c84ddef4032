// Training iterations on the simulated machine: the FLOPs a step does, the pipeline bubble, what
// ZeRO-1 and recomputation save, and bad plans.

#include <gtest/gtest.h>

#include "run_helpers.hpp"
#include "syntorch/hw/config_loader.hpp"
#include "syntorch/session/train.hpp"

namespace {

using namespace syntorch;
using session_testing::config;
using session_testing::model;

// A small GPT with a tiny vocabulary, so the logits' GEMM (not recomputed) is negligible.
constexpr const char* kSmall = "gpt:layers=4,hidden=1024,heads=16,vocab=256";

session::TrainSpec spec(const char* m, int tp, int pp, int dp, std::int64_t global_batch) {
  session::TrainSpec s;
  s.model = model(m);
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.global_batch = global_batch;
  s.micro_batch = 1;
  s.seq = 1024;
  return s;
}

double flops(const session::TrainReport& r, std::initializer_list<runtime::OpKind> kinds) {
  double f = 0;
  for (const auto& rank : r.engine.ranks) {
    for (runtime::OpKind k : kinds) f += rank.flops_by_op[static_cast<std::size_t>(k)];
  }
  return f;
}

TEST(Train, AStepDoesThreeForwardsOfMatrixFlopsAndFourWithFullRecompute) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 2, 1, 1, 4);
  const session::TrainReport none = session::simulate_training(m, {}, s);
  s.recompute = models::Recompute::full;
  const session::TrainReport full = session::simulate_training(m, {}, s);
  ASSERT_FALSE(none.oom);
  ASSERT_FALSE(full.oom);
  // The GEMMs: what recomputation added is one forward; a step without it does dX and dW for each
  // forward GEMM. The logits' GEMM is not recomputed: 3 x 2 x hidden x vocab a token against 96
  // x hidden^2 for the four layers adds 3 x 256 / (48 x 1024) = 1.6% to the ratio.
  const double forward = flops(full, {runtime::OpKind::gemm}) - flops(none, {runtime::OpKind::gemm});
  EXPECT_NEAR(flops(none, {runtime::OpKind::gemm}) / forward, 3.0 + 3.0 * 256 / (48 * 1024), 1e-6);
  EXPECT_NEAR(flops(full, {runtime::OpKind::gemm}) / forward, 4.0 + 3.0 * 256 / (48 * 1024), 1e-6);
  // Attention: FlashAttention's backward recomputes the scores (2.5 forwards), recomputation one more.
  const double attention = flops(none, {runtime::OpKind::attention});
  EXPECT_DOUBLE_EQ(flops(none, {runtime::OpKind::attention_backward}), 2.5 * attention);
  EXPECT_DOUBLE_EQ(flops(full, {runtime::OpKind::attention}), 2 * attention);
  // Recomputation keeps only each layer's input: less activation memory, more time.
  const auto act = static_cast<std::size_t>(os::MemoryUse::activations);
  EXPECT_LT(full.stages[0].peak_by_use[act], none.stages[0].peak_by_use[act] / 2);
  EXPECT_GT(full.iteration_s, none.iteration_s);
  EXPECT_NEAR(full.tflops_per_gpu / none.tflops_per_gpu, none.iteration_s / full.iteration_s, 1e-9);
  // Selective recomputation checkpoints the attention core only (Megatron's
  // checkpoint_core_attention): its forward runs again, no GEMM does, and the core's output is not
  // kept for the backward.
  s.recompute = models::Recompute::selective;
  const session::TrainReport selective = session::simulate_training(m, {}, s);
  ASSERT_FALSE(selective.oom);
  EXPECT_DOUBLE_EQ(flops(selective, {runtime::OpKind::gemm}), flops(none, {runtime::OpKind::gemm}));
  EXPECT_DOUBLE_EQ(flops(selective, {runtime::OpKind::attention}), 2 * attention);
  EXPECT_DOUBLE_EQ(flops(selective, {runtime::OpKind::attention_backward}), 2.5 * attention);
  EXPECT_LT(selective.stages[0].peak_by_use[act], none.stages[0].peak_by_use[act]);
  EXPECT_GT(selective.iteration_s, none.iteration_s);
  EXPECT_LT(selective.iteration_s, full.iteration_s);
}

TEST(Train, OneFOneBsBubbleIsPpMinusOneOverMPlusPpMinusOne) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  // A balanced pipeline of 4 stages: the iteration takes (m + pp - 1) micro-batch slots.
  const char* deep = "gpt:layers=8,hidden=2048,heads=16,vocab=256";
  const session::TrainReport few = session::simulate_training(m, {}, spec(deep, 1, 4, 1, 4));
  const session::TrainReport many = session::simulate_training(m, {}, spec(deep, 1, 4, 1, 16));
  EXPECT_DOUBLE_EQ(few.bubble_fraction, 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(many.bubble_fraction, 3.0 / 19.0);
  EXPECT_NEAR(many.iteration_s / few.iteration_s, 19.0 / 7.0, 0.15 * 19.0 / 7.0);
  // GPipe has the same bubble but keeps every micro-batch's activations.
  session::TrainSpec g = spec(deep, 1, 4, 1, 16);
  g.gpipe = true;
  const session::TrainReport gpipe = session::simulate_training(m, {}, g);
  const auto act = static_cast<std::size_t>(os::MemoryUse::activations);
  EXPECT_GT(gpipe.stages[0].peak_by_use[act], 2 * many.stages[0].peak_by_use[act]);
}

TEST(Train, InterleavingDividesTheBubbleByTheVirtualStages) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const char* model = "gpt:layers=24,hidden=2048,heads=16,vocab=256";
  session::TrainSpec s = spec(model, 1, 4, 1, 8);
  s.seq = 2048;
  const session::TrainReport plain = session::simulate_training(m, {}, s);
  s.vp = 2;
  const session::TrainReport interleaved = session::simulate_training(m, {}, s);
  EXPECT_DOUBLE_EQ(plain.bubble_fraction, 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(interleaved.bubble_fraction, 3.0 / 19.0);
  // 8 micro-batch slots plus a bubble of 3 slots, or of 3/2 with two chunks a rank (each a half
  // slot): the ratio of the iterations, up to the extra sends between chunks.
  EXPECT_NEAR(interleaved.iteration_s / plain.iteration_s, 9.5 / 11.0, 0.05 * 9.5 / 11.0);
  // Interleaving needs at least three stages and micro-batches a multiple of them.
  Diagnostics d;
  session::TrainSpec two = spec(model, 1, 2, 1, 8);
  two.vp = 2;
  EXPECT_FALSE(session::validate_train(two, m, d, "flags"));
  EXPECT_NE(d.to_string().find("at least 3 pipeline stages"), std::string::npos) << d.to_string();
}

TEST(Train, TheDistributedOptimizerDividesOptimizerStateByDp) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 1, 1, 4, 4);
  const session::TrainReport plain = session::simulate_training(m, {}, s);
  s.zero = 1;
  const session::TrainReport zero = session::simulate_training(m, {}, s);
  const auto opt = static_cast<std::size_t>(os::MemoryUse::optimizer_state);
  // fp32 master weights and both Adam moments: 12 bytes a parameter, a quarter of them each.
  const double ratio = static_cast<double>(zero.stages[0].peak_by_use[opt]) /
                       static_cast<double>(plain.stages[0].peak_by_use[opt]);
  EXPECT_NEAR(ratio, 0.25, 0.01);
  EXPECT_NEAR(static_cast<double>(plain.stages[0].peak_by_use[opt]), 12.0 * s.model->parameters(),
              0.02 * 12.0 * s.model->parameters());
}

TEST(Train, OverlappingTheGradientReductionHidesItAndSlowsTheMemoryBoundKernelsUnderIt) {
  // HBM slow enough that a bucket's all-reduce (reading and writing it at NVLink's rate) and the
  // backward's memory-bound kernels both need more of it than there is.
  Diagnostics d;
  const hw::Machine m =
      hw::Machine::load(config("dgx_h100.json"), hw::parse_overrides({"/components/gpu/components/hbm/bandwidth=1 TB/s"}, d));
  session::TrainSpec s = spec("gpt:layers=8,hidden=2048,heads=16,vocab=50304", 1, 1, 8, 16);
  const session::TrainReport serial = session::simulate_training(m, {}, s);
  s.overlap_grad_reduce = true;
  const session::TrainReport overlapped = session::simulate_training(m, {}, s);
  EXPECT_GT(serial.exposed_communication_s, 0);
  EXPECT_LT(overlapped.exposed_communication_s, serial.exposed_communication_s / 100);  // the norm's read only
  EXPECT_GT(overlapped.overlapped_communication_s, 0);
  EXPECT_LT(overlapped.iteration_s, serial.iteration_s);
  // The buckets' all-reduces read and write HBM while the backward's memory-bound kernels run:
  // those take longer than when the reduction waits for the step, and so does the reduction.
  auto memory_bound = [](const session::TrainReport& r) {
    double t = 0;
    for (const auto& rank : r.engine.ranks) t += static_cast<double>(rank.memory_bound_ps);
    return t;
  };
  EXPECT_GT(memory_bound(overlapped), memory_bound(serial));
  EXPECT_GT(overlapped.overlapped_communication_s, serial.exposed_communication_s);
}

TEST(Train, OverlappingTheParameterGatherRunsItUnderTheNextForward) {
  // Sixteen H100s on two nodes: the distributed optimizer's all-gather of the updated weights is
  // long enough to matter. With the gather overlapped, the step ends with its compute and each
  // layer's next forward waits only for its own bucket's gather.
  const hw::Machine m = hw::Machine::load(config("dgx_h100_x2.json"));
  for (const int pp : {1, 2}) {
    session::TrainSpec s = spec("gpt:layers=8,hidden=2048,heads=16,vocab=50304", 1, pp, 16 / pp, 16);
    s.zero = 1;
    s.overlap_grad_reduce = true;
    const session::TrainReport serial = session::simulate_training(m, {}, s);
    s.overlap_param_gather = true;
    const session::TrainReport overlapped = session::simulate_training(m, {}, s);
    // The gathers left the compute stream: less exposed, as much more on the communication stream.
    const double moved = serial.exposed_communication_s - overlapped.exposed_communication_s;
    EXPECT_GT(moved, 0) << "pp " << pp;
    EXPECT_NEAR(overlapped.overlapped_communication_s - serial.overlapped_communication_s, moved, 0.25 * moved)
        << "pp " << pp;
    // Shorter, but not by all of it: the first layers wait for their bucket's gather (on every
    // stage, its first layer's norm included).
    EXPECT_LT(overlapped.iteration_s, serial.iteration_s) << "pp " << pp;
    EXPECT_GT(overlapped.iteration_s, serial.iteration_s - moved) << "pp " << pp;
    // The same collectives, the same kernels.
    EXPECT_EQ(overlapped.engine.ranks[0].kernels, serial.engine.ranks[0].kernels) << "pp " << pp;
  }
  // It overlaps the distributed optimizer's gather and, as Megatron's, comes with the overlapped
  // gradient reduction.
  session::TrainSpec s = spec("gpt:layers=8,hidden=2048,heads=16,vocab=50304", 1, 1, 16, 16);
  s.overlap_param_gather = true;
  for (const auto& [zero, reduce] : {std::pair{0, true}, std::pair{1, false}}) {
    s.zero = zero;
    s.overlap_grad_reduce = reduce;
    Diagnostics d;
    EXPECT_FALSE(session::validate_train(s, m, d, "flags"));
    EXPECT_NE(d.to_string().find("flags:overlap_param_gather"), std::string::npos) << d.to_string();
    EXPECT_NE(d.to_string().find("(zero 1) and overlap_grad_reduce"), std::string::npos) << d.to_string();
  }
}

TEST(Train, MirroredDataParallelReplicasGiveWhatSimulatingEveryReplicaGives) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 2, 2, 2, 8);
  const session::TrainReport one = session::simulate_training(m, {}, s);
  s.mirror_replicas = false;
  const session::TrainReport all = session::simulate_training(m, {}, s);
  EXPECT_EQ(one.simulated_replicas, 1);
  EXPECT_EQ(all.simulated_replicas, 2);
  EXPECT_EQ(one.engine.simulated_ranks, 4u);
  EXPECT_EQ(all.engine.simulated_ranks, 8u);
  ASSERT_EQ(one.engine.ranks.size(), 8u);
  // The other replica's tensor-parallel and pipeline traffic shares only the NVSwitch.
  EXPECT_NEAR(one.iteration_s, all.iteration_s, 0.01 * all.iteration_s);
  EXPECT_EQ(one.stages[1].peak_bytes, all.stages[1].peak_bytes);
  // Naming a rank of replica 1 for the trace simulates that replica.
  s.mirror_replicas = true;
  s.trace_ranks = {2};
  EXPECT_EQ(session::simulate_training(m, {}, s).simulated_replicas, 2);
}

// With interleaving, each model chunk's last micro-batch closes its gradients: their reduction
// starts under the rest of the backward for every chunk, not only the one that finishes last.
TEST(Train, OverlappedGradientReductionCoversEveryChunkOfAnInterleavedPipeline) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec("gpt:layers=16,hidden=2048,heads=16,vocab=256", 1, 4, 2, 8);
  s.vp = 2;
  const session::TrainReport serial = session::simulate_training(m, {}, s);
  s.overlap_grad_reduce = true;
  const session::TrainReport overlapped = session::simulate_training(m, {}, s);
  ASSERT_GT(serial.exposed_communication_s, 0);
  EXPECT_GT(overlapped.overlapped_communication_s, 0);
  EXPECT_LT(overlapped.exposed_communication_s, 0.5 * serial.exposed_communication_s)
      << "serial " << serial.exposed_communication_s << " s, overlapped " << overlapped.exposed_communication_s << " s";
}

TEST(Train, HiddenDropoutCostsAKernelAndAMaskPerBranchAndNothingWhenOff) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 1, 1, 1, 2);
  s.hidden_dropout = 0;
  const session::TrainReport off = session::simulate_training(m, {}, s);
  s.hidden_dropout = 0.1;
  const session::TrainReport on = session::simulate_training(m, {}, s);
  auto kernels = [](const session::TrainReport& r) { return r.engine.ranks[0].kernels; };
  // Per layer and micro-batch: two dropout kernels forward, two multiplies by the mask backward;
  // 4 layers; 2 micro-batches measured after a warm-up of 1 (it fills a one-stage pipeline).
  EXPECT_EQ(kernels(on) - kernels(off), 4u * 4 * (2 + 1));
  const auto act = static_cast<std::size_t>(os::MemoryUse::activations);
  EXPECT_GT(on.stages[0].peak_by_use[act], off.stages[0].peak_by_use[act]);  // the masks, kept for backward
}

TEST(Train, AttentionDropoutDrawsItsMaskInsideFlashAttentionAndIsAKernelUnfused) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 1, 1, 1, 2);
  s.hidden_dropout = 0;
  auto kernels = [](const session::TrainReport& r) { return r.engine.ranks[0].kernels; };
  // FlashAttention: no kernel more, the mask's random numbers drawn forward and again backward
  // (on the A100 FlashAttention-2 runs its softmax work between the products, long sequences
  // make the attention count).
  const hw::Machine a100 = hw::Machine::load(config("dgx_a100.json"));
  session::TrainSpec longer = s;
  longer.seq = 4096;
  longer.attention_dropout = 0;
  const session::TrainReport off = session::simulate_training(a100, {}, longer);
  longer.attention_dropout = 0.1;
  const session::TrainReport on = session::simulate_training(a100, {}, longer);
  EXPECT_EQ(kernels(on), kernels(off));
  EXPECT_GT(on.iteration_s, 1.01 * off.iteration_s);
  // Unfused: a dropout kernel over the probabilities forward and the multiply by its mask backward,
  // per layer (4) and micro-batch (2 measured after a warm-up of 1).
  Diagnostics d;
  const runtime::KernelPolicy unfused = runtime::KernelPolicy::parse("attention=unfused", d);
  s.attention_dropout = 0;
  const session::TrainReport unfused_off = session::simulate_training(m, unfused, s);
  s.attention_dropout = 0.1;
  const session::TrainReport unfused_on = session::simulate_training(m, unfused, s);
  EXPECT_EQ(kernels(unfused_on) - kernels(unfused_off), 4u * 2 * (2 + 1));
  // Bad probabilities are refused under the parameter's name.
  session::TrainSpec bad = spec(kSmall, 1, 1, 1, 2);
  Diagnostics why;
  EXPECT_TRUE(session::set_train_parameter(bad, "attention_dropout", "1.5", why, "row"));
  EXPECT_NE(why.to_string().find("row:attention_dropout:"), std::string::npos) << why.to_string();
}

TEST(Train, UnfusedAttentionKeepsItsProbabilitiesUnlessTheCoreIsRecomputed) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  session::TrainSpec s = spec(kSmall, 1, 1, 1, 1);  // 4 layers, 16 heads, 1024 tokens, one sequence
  s.hidden_dropout = 0;
  Diagnostics d;
  const runtime::KernelPolicy unfused = runtime::KernelPolicy::parse("attention=unfused", d);
  const auto act = static_cast<std::size_t>(os::MemoryUse::activations);
  auto activations = [&](const runtime::KernelPolicy& p) {
    const session::TrainReport r = session::simulate_training(m, p, s);
    EXPECT_FALSE(r.oom);
    return static_cast<double>(r.stages[0].peak_by_use[act]);
  };
  // Per layer, 16 x 1024 x 1024 scores: the softmax's output (2 bytes in bf16), the dropout's
  // mask (1) and output (2) kept for the backward, as Korthikanti et al. count them (5as^2b);
  // the scores themselves (2 bytes) only while the softmax reads them.
  const double scores = 16.0 * 1024 * 1024;
  const double flash = activations({});
  const double kept = activations(unfused) - flash;
  EXPECT_GE(kept, 4 * 5 * scores);
  EXPECT_LE(kept, 4 * 5 * scores + 2 * 2 * scores);
  // Selective recomputation keeps them for one layer at a time, while its backward runs.
  s.recompute = models::Recompute::selective;
  EXPECT_LE(activations(unfused) - activations({}), 5 * scores + 2 * 2 * scores);
}

TEST(Train, APlanThatDoesNotFitIsASimulatedOomWithEachStagesMemory) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const session::TrainReport r = session::simulate_training(m, {}, spec("gpt3-175b", 8, 1, 1, 1));
  ASSERT_TRUE(r.oom);
  ASSERT_TRUE(r.engine.oom.has_value());
  EXPECT_EQ(r.stages.size(), 1u);
}

TEST(Train, BadPlansAreRefusedNamingTheFlag) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  Diagnostics d;
  session::TrainSpec s = spec(kSmall, 4, 2, 2, 4);  // 16 GPUs on an 8-GPU machine
  EXPECT_FALSE(session::validate_train(s, m, d, "flags"));
  EXPECT_NE(d.to_string().find("needs 16 devices"), std::string::npos) << d.to_string();
  Diagnostics d2;
  session::TrainSpec b = spec(kSmall, 1, 1, 2, 3);  // 3 sequences over dp 2
  EXPECT_FALSE(session::validate_train(b, m, d2, "flags"));
  // Keyed as the parameter is written in rows and studies (the CLI shows it as --global-batch).
  EXPECT_NE(d2.to_string().find("flags:global_batch:"), std::string::npos) << d2.to_string();
  // Sizes that would divide by zero or run backwards, a dtype training does not take and a model
  // that cannot train are refused before anything runs, each under its own key.
  for (auto [key, change] : std::initializer_list<std::pair<const char*, void (*)(session::TrainSpec&)>>{
           {"flags:dp:", [](session::TrainSpec& t) { t.dp = 0; }},
           {"flags:tp:", [](session::TrainSpec& t) { t.tp = 0; }},
           {"flags:micro_batch:", [](session::TrainSpec& t) { t.micro_batch = 0; }},
           {"flags:global_batch:", [](session::TrainSpec& t) { t.global_batch = -8; }},
           {"flags:zero:", [](session::TrainSpec& t) { t.zero = 2; }},
           {"flags:dtype:", [](session::TrainSpec& t) { t.dtype = DType::fp8; }},
           {"flags:model:", [](session::TrainSpec& t) { t.model = model("mixtral-8x7b"); }}}) {
    session::TrainSpec bad = spec(kSmall, 1, 1, 2, 4);
    change(bad);
    Diagnostics why;
    EXPECT_FALSE(session::validate_train(bad, m, why, "flags")) << key;
    EXPECT_NE(why.to_string().find(key), std::string::npos) << why.to_string();
  }
  // The model's own layout problems are named by the training run's keys.
  Diagnostics huge;
  session::TrainSpec wide = spec(kSmall, 1, 1, 1, 1 << 22);
  wide.micro_batch = 1 << 22;
  wide.seq = 1 << 22;  // 2^44 tokens a micro-batch: beyond what a tensor can be sized
  EXPECT_FALSE(session::validate_train(wide, m, huge, "flags"));
  EXPECT_NE(huge.to_string().find("flags:micro_batch:"), std::string::npos) << huge.to_string();
  Diagnostics d3;
  session::TrainSpec r = spec(kSmall, 1, 1, 1, 1);
  EXPECT_FALSE(session::set_train_parameter(r, "bogus", "1", d3, "row"));
  EXPECT_TRUE(session::set_train_parameter(r, "recompute", "sometimes", d3, "row"));
  EXPECT_NE(d3.to_string().find("none, selective, full"), std::string::npos) << d3.to_string();
}

}  // namespace
