#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "syntorch/runtime/executor.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::runtime {
namespace {

std::string config_path(const std::string& name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / (name + ".json")).string();
}

OpDesc gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k, DType t = DType::fp16) {
  OpDesc op;
  op.kind = OpKind::gemm;
  op.dtype = t;
  op.m = m;
  op.n = n;
  op.k = k;
  return op;
}

// Self-attention over `seq` tokens, one K/V head per query head.
OpDesc attention(std::uint64_t batch, std::uint64_t heads, std::uint64_t seq, std::uint64_t head_dim) {
  OpDesc op;
  op.kind = OpKind::attention;
  op.batch = batch;
  op.heads = op.kv_heads = heads;
  op.seq_q = op.seq_kv = seq;
  op.head_dim = head_dim;
  return op;
}

double predict_s(const hw::Machine& m, const OpDesc& op, const std::string& policy = "") {
  Diagnostics d;
  Predictor p(m, KernelPolicy::parse(policy, d));
  EXPECT_TRUE(d.empty()) << d.to_string();
  return p.predict(op).time_s;
}

// A wave of CTAs stacked on units lasts as long as its busiest unit: 256 CTAs on 132 units, two
// to a unit, leave 124 units holding two, so the wave costs two CTAs' arithmetic, not one; an
// imbalance from uneven CTAs scales that arithmetic.
TEST(KernelPhases, AStackedWaveLastsAsLongAsItsBusiestUnit) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  const hw::Device& d = m.devices()[0];
  Kernel k;
  k.tiles = 256;
  k.tiles_per_unit = 2;
  k.tile_compute_s = 1e-6;
  const KernelPhases even = plan_phases(k, d);
  double compute_s = 0;
  for (int i = 0; i < even.count; ++i) compute_s += even.phases[i].compute_s;
  EXPECT_DOUBLE_EQ(compute_s, 2e-6);
  k.imbalance = 1.5;
  const KernelPhases uneven = plan_phases(k, d);
  double uneven_s = 0;
  for (int i = 0; i < uneven.count; ++i) uneven_s += uneven.phases[i].compute_s;
  EXPECT_DOUBLE_EQ(uneven_s, 3e-6);
}

// ResNet-50's 3x3 convolution of its second stage (56x56, 64 -> 64 channels, batch 32) as an
// implicit GEMM; m = 32 x 56 x 56 positions, k = 64 x 9.
OpDesc conv3x3(DType t, bool channels_last) {
  OpDesc op;
  op.kind = OpKind::conv;
  op.dtype = t;
  op.m = 32 * 56 * 56;
  op.n = 64;
  op.k = 64 * 9;
  op.elements = 32 * 64 * 56 * 56;
  op.window = 9;
  op.stride = 1;
  op.channels_last = channels_last;
  return op;
}

TEST(ConvLowering, AnImplicitGemmReadsItsInputOnceAndNchwAddsTransposes) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor p(m, KernelPolicy{});
  const Prediction nhwc = p.predict(conv3x3(DType::fp16, true));
  ASSERT_EQ(nhwc.kernels.size(), 1u);
  EXPECT_EQ(nhwc.kernels[0].impl, "implicit_gemm");
  // The input's 12.8 MB once, not the 115 MB of its windows unrolled.
  const double input_bytes = 32.0 * 64 * 56 * 56 * 2;
  EXPECT_LT(nhwc.kernels[0].hbm_bytes, 3 * input_bytes);
  EXPECT_DOUBLE_EQ(nhwc.kernels[0].flops, 2.0 * 32 * 56 * 56 * 64 * 64 * 9);
  const Prediction nchw = p.predict(conv3x3(DType::fp16, false));
  ASSERT_EQ(nchw.kernels.size(), 3u);
  EXPECT_EQ(nchw.kernels[0].name, "nchw_to_nhwc");
  EXPECT_EQ(nchw.kernels[2].name, "nhwc_to_nchw");
  EXPECT_GT(nchw.time_s, nhwc.time_s);
}

TEST(ConvLowering, WinogradRunsFp32ThreeByThreeFiltersOnVectorUnitsAndIsRefusedElsewhere) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor p(m, KernelPolicy{});
  const Prediction fp32 = p.predict(conv3x3(DType::fp32, true));  // no fp32 matrix units: Winograd
  ASSERT_EQ(fp32.kernels.size(), 3u);
  EXPECT_EQ(fp32.kernels[1].impl, "winograd");
  EXPECT_LT(fp32.time_s, predict_s(m, conv3x3(DType::fp32, true), "conv=implicit_gemm"));
  OpDesc pointwise = conv3x3(DType::fp16, true);
  pointwise.window = 1;
  pointwise.k = 64;
  Diagnostics d;
  Predictor forced(m, KernelPolicy::parse("conv=winograd", d));
  EXPECT_THROW(forced.predict(pointwise), InputError);
}

TEST(GemmTiler, WaveQuantisationAddsAPartialWave) {
  // simple_gpu has 64 units; with one 128x128 tile shape, 64 tiles fill one wave exactly and
  // 72 tiles spill 8 into a second wave that costs as much as the first.
  const hw::Machine m = hw::Machine::load(config_path("simple_gpu"), {{"/components/gpu/components/core/gemm_tiles", R"(["128x128x32"])"}});
  const double one_wave = predict_s(m, gemm(1024, 1024, 4096), "gemm=tiled");
  const double spill = predict_s(m, gemm(1024, 1152, 4096), "gemm=tiled");
  EXPECT_GT(spill / one_wave, 1.8);
  EXPECT_LT(spill / one_wave, 2.1);
}

TEST(GemmTiler, DoublingHbmBandwidthSpeedsMemoryBoundOpsNotALargeGemm) {
  const hw::Machine base = hw::Machine::load(config_path("a100_sxm4_80gb"));
  const hw::Machine fast = hw::Machine::load(config_path("a100_sxm4_80gb"),
                                             {{"/components/gpu/components/hbm/bandwidth", "4078 GB/s"}});
  OpDesc gelu;
  gelu.kind = OpKind::gelu;
  gelu.elements = 1ULL << 28;
  const double gelu_speedup = predict_s(base, gelu) / predict_s(fast, gelu);
  EXPECT_GT(gelu_speedup, 1.8);
  const double gemm_speedup = predict_s(base, gemm(8192, 8192, 8192)) / predict_s(fast, gemm(8192, 8192, 8192));
  EXPECT_LT(gemm_speedup, 1.05);
  EXPECT_GE(gemm_speedup, 1.0);
}

TEST(GemmTiler, TinySideTakesTheGemvPathAndSkinnyLongKSplitsK) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(m, KernelPolicy{});
  const Prediction gemv = p.predict(gemm(1, 12288, 12288));
  EXPECT_EQ(gemv.kernels[0].impl, "gemv");
  EXPECT_EQ(gemv.bound, "memory");
  const Prediction skinny = p.predict(gemm(256, 256, 65536));
  EXPECT_EQ(skinny.kernels[0].impl, "splitk") << skinny.kernels[0].name;
}

TEST(GemmTiler, ACtaPairSharesItsLargerPanelSoAFeedBoundTileBecomesMathBound) {
  // B016's shape on B200: a 256x128 tile fed both its panels alone is bound by the unit's feed;
  // in a CTA pair (tcgen05 .cta_group::2) the 256-row panel is fetched once between two SMs.
  const std::string cluster = "/components/gpu/components/sm/tile_cluster";
  const hw::Machine alone = hw::Machine::load(config_path("b200_sxm"), {{cluster, "1"}});
  const hw::Machine pair = hw::Machine::load(config_path("b200_sxm"), {{cluster, "2"}});
  const OpDesc op = gemm(1792, 16128, 3072, DType::bf16);
  Predictor pa(alone, KernelPolicy{}), pp(pair, KernelPolicy{});
  const Prediction a = pa.predict(op), p = pp.predict(op);
  auto why = [](const Prediction& x) {
    std::string text;
    for (const auto& line : x.kernels.at(0).why) text += line + "\n";
    return text;
  };
  EXPECT_NE(why(a).find("L2-feed-bound"), std::string::npos) << why(a);
  EXPECT_NE(why(p).find("math-bound (its larger panel shared by a cluster of 2 CTAs)"), std::string::npos) << why(p);
  EXPECT_GT(a.time_s / p.time_s, 1.1);
  // Blackwell's matrix rate per SM is twice Hopper's at about the same feed: without the pair
  // even a large square tile waits on its panels; with it the tile is math-bound and gains no more.
  const OpDesc square = gemm(8192, 8192, 8192, DType::bf16);
  EXPECT_NE(why(pa.predict(square)).find("L2-feed-bound"), std::string::npos);
  const Prediction paired_square = pp.predict(square);
  EXPECT_NE(why(paired_square).find("math-bound"), std::string::npos) << why(paired_square);
  const hw::Machine quad = hw::Machine::load(config_path("b200_sxm"), {{cluster, "4"}});
  Predictor pq(quad, KernelPolicy{});
  EXPECT_NEAR(pq.predict(square).time_s / paired_square.time_s, 1.0, 0.01);
}

TEST(GemmTiler, Tf32OnADeviceWithoutTf32UnitsRunsAsFp32) {
  // simple_gpu has fp32 matrix units and no TF32 ones: allowing TF32 changes nothing there.
  const hw::Machine m = hw::Machine::load(config_path("simple_gpu"));
  EXPECT_DOUBLE_EQ(predict_s(m, gemm(2048, 2048, 2048, DType::tf32)), predict_s(m, gemm(2048, 2048, 2048, DType::fp32)));
  // The A100's TF32 units are 8x its fp32 vector rate: a large product gains most of that.
  const hw::Machine a100 = hw::Machine::load(config_path("a100_sxm4_80gb"));
  EXPECT_GT(predict_s(a100, gemm(4096, 4096, 4096, DType::fp32)), 4 * predict_s(a100, gemm(4096, 4096, 4096, DType::tf32)));
}

TEST(GemmTiler, Fp8IsRefusedOnADeviceWithoutIt) {
  const hw::Machine a100 = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(a100, KernelPolicy{});
  try {
    p.predict(gemm(4096, 4096, 4096, DType::fp8));
    FAIL() << "fp8 on A100 must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("fp8 is not supported"), std::string::npos) << e.what();
  }
  const hw::Machine h100 = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor q(h100, KernelPolicy{});
  const double fp8 = q.predict(gemm(8192, 8192, 8192, DType::fp8)).time_s;
  const double bf16 = q.predict(gemm(8192, 8192, 8192, DType::bf16)).time_s;
  EXPECT_LT(fp8, 0.6 * bf16);  // twice the matrix throughput
}

TEST(Attention, CausalCostsAboutHalfTheFlops) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc op = attention(4, 32, 4096, 128);
  const Prediction full = p.predict(op);
  op.causal = true;
  const Prediction causal = p.predict(op);
  EXPECT_NEAR(causal.flops / full.flops, 0.5, 0.01);
  EXPECT_NEAR(causal.time_s / full.time_s, 0.5, 0.08);
  EXPECT_EQ(full.bound, "compute");
}

TEST(Attention, TheBackendSwitchesNarrowWhatAutoChoosesAsPyTorchDispatches) {
  const hw::Machine h100 = hw::Machine::load(config_path("h100_sxm5_80gb"));
  const hw::Machine a100 = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor ph(h100, KernelPolicy{}), pa(a100, KernelPolicy{});
  auto impl = [](Predictor& p, std::uint8_t backends) {
    OpDesc op = attention(2, 16, 1024, 64);
    op.sdp_backends = backends;
    return p.predict(op).kernels.front().impl;
  };
  constexpr std::uint8_t only = OpDesc::kSdpRestricted;
  EXPECT_EQ(impl(ph, 0), "flash_v3");                           // every backend: the fastest fused kernel
  EXPECT_EQ(impl(ph, only | OpDesc::kSdpFlash), "flash_v2");    // PyTorch's FlashAttention is FlashAttention-2
  EXPECT_EQ(impl(ph, only | OpDesc::kSdpCudnn), "flash_v3");    // cuDNN's, FlashAttention-3-class on Hopper
  EXPECT_EQ(impl(pa, only | OpDesc::kSdpCudnn), "flash_v2");    // ... and not on Ampere
  EXPECT_EQ(impl(ph, only | OpDesc::kSdpMemEfficient), "mem_efficient");
  EXPECT_EQ(impl(ph, only | OpDesc::kSdpMath), "unfused");      // only the math path left
  EXPECT_EQ(impl(ph, only | OpDesc::kSdpFlash | OpDesc::kSdpMemEfficient | OpDesc::kSdpMath), "flash_v2");
  OpDesc none = attention(2, 16, 1024, 64);
  none.sdp_backends = only;  // none of the four
  EXPECT_THROW(ph.predict(none), InputError);
  // A policy that names an implementation is followed whatever the switches say.
  Diagnostics d;
  Predictor pinned(h100, KernelPolicy::parse("attention=flash_v2", d));
  OpDesc math_only = attention(2, 16, 1024, 64);
  math_only.sdp_backends = only | OpDesc::kSdpMath;
  EXPECT_EQ(pinned.predict(math_only).kernels.front().impl, "flash_v2");
}

TEST(Attention, DecodeSplitsTheKvCacheAndIsMemoryBound) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc op;
  op.kind = OpKind::attention;
  op.batch = 1;
  op.heads = 64;
  op.kv_heads = 8;  // GQA
  op.seq_q = 1;
  op.seq_kv = 32768;
  op.head_dim = 128;
  const Prediction d = p.predict(op);
  EXPECT_EQ(d.bound, "memory");
  EXPECT_NE(d.kernels[0].name.find("split-kv"), std::string::npos);
  // Enough CTAs to fill most of the device: FlashAttention's heuristic takes the fewest splits
  // within 85% of the best wave efficiency (14 here: 112 CTAs on 132 SMs, one wave).
  EXPECT_GE(d.kernels[0].tiles, 106u);
  EXPECT_EQ(d.runs[0].units, d.kernels[0].tiles);
  // Reading the KV cache once: 2 * 8 heads * 32768 * 128 * 2 bytes; then the splits' fp32
  // partial outputs combined by a kernel of their own.
  EXPECT_NEAR(d.kernels[0].hbm_bytes, 2.0 * 8 * 32768 * 128 * 2, 64.0 * 128 * 4);
  ASSERT_EQ(d.kernels.size(), 2u);
  EXPECT_NE(d.kernels[1].name.find("combine"), std::string::npos);
}

TEST(Attention, UnfusedRunsThreeKernelsAndFlashV3NeedsAsyncMatrixUnits) {
  const hw::Machine a100 = hw::Machine::load(config_path("a100_sxm4_80gb"));
  const OpDesc op = attention(2, 16, 2048, 64);
  Diagnostics d;
  Predictor unfused(a100, KernelPolicy::parse("attention=unfused", d));
  const Prediction u = unfused.predict(op);
  ASSERT_EQ(u.kernels.size(), 3u);
  Predictor fused(a100, KernelPolicy::parse("attention=flash_v2", d));
  EXPECT_LT(fused.predict(op).time_s, u.time_s);
  Predictor v3(a100, KernelPolicy::parse("attention=flash_v3", d));
  EXPECT_THROW(v3.predict(op), InputError);
  const hw::Machine h100 = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor v3h(h100, KernelPolicy::parse("attention=flash_v3", d));
  Predictor v2h(h100, KernelPolicy::parse("attention=flash_v2", d));
  EXPECT_LT(v3h.predict(op).time_s, v2h.predict(op).time_s);
}

TEST(Attention, DropoutIsRandomNumbersInTheFusedKernelAndAKernelOfItsOwnUnfused) {
  const hw::Machine a100 = hw::Machine::load(config_path("a100_sxm4_80gb"));
  const OpDesc op = attention(2, 16, 2048, 128);
  OpDesc dropped = op;
  dropped.dropout = true;
  Diagnostics d;
  // FlashAttention-2 draws the mask (Philox) between its products: the same kernel, longer.
  Predictor flash(a100, KernelPolicy::parse("attention=flash_v2", d));
  const Prediction f = flash.predict(op), fd = flash.predict(dropped);
  ASSERT_EQ(fd.kernels.size(), 1u);
  EXPECT_GT(fd.time_s, 1.05 * f.time_s);
  EXPECT_NE(fd.kernels[0].why[2].find("dropout's random mask"), std::string::npos) << fd.kernels[0].why[2];
  // Unfused: a dropout kernel over the probabilities between the softmax and AV; the backward
  // multiplies dP by the mask, and follows the forward's implementation without being named.
  const KernelPolicy unfused_policy = KernelPolicy::parse("attention=unfused", d);
  EXPECT_EQ(unfused_policy.entry(OpKind::attention_backward).impl, "unfused");
  EXPECT_EQ(KernelPolicy::parse("attention=unfused,attention_backward=flash_v2", d).entry(OpKind::attention_backward).impl,
            "flash_v2");
  // The implementation follows, not the precision; what the policy says stays what it describes.
  const KernelPolicy fp8 = KernelPolicy::parse("attention=flash_v3:fp8", d);
  EXPECT_EQ(fp8.entry(OpKind::attention_backward).impl, "flash_v3");
  EXPECT_FALSE(fp8.entry(OpKind::attention_backward).precision.has_value());
  EXPECT_EQ(fp8.describe(), "attention=flash_v3:fp8");
  Predictor unfused(a100, unfused_policy);
  const Prediction u = unfused.predict(dropped);
  ASSERT_EQ(u.kernels.size(), 4u);
  EXPECT_EQ(u.kernels[2].name, "attention dropout");
  OpDesc back = dropped;
  back.kind = OpKind::attention_backward;
  const Prediction ub = unfused.predict(back);
  back.dropout = false;
  EXPECT_EQ(ub.kernels.size(), unfused.predict(back).kernels.size() + 1);
  EXPECT_TRUE(d.empty()) << d.to_string();
}

TEST(Collectives, RingAllReduceSendsTwoNMinusOneOverNOfTheBytesPerRank) {
  const hw::Machine m = hw::Machine::load(config_path("dgx_a100"));
  Diagnostics d;
  Dispatcher disp(m, KernelPolicy::parse("allreduce=ring", d));
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 64ULL << 20;
  const std::vector<std::uint32_t> devices{0, 1, 2, 3, 4, 5, 6, 7};
  const CollectivePlan plan = disp.lower_collective(op, devices);
  EXPECT_EQ(plan.algorithm, "ring");
  std::vector<double> sent(m.endpoints().size(), 0);
  for (const Transfer& t : plan.transfers) sent[t.src_endpoint] += t.bytes;
  for (std::uint32_t dev : devices) {
    EXPECT_NEAR(sent[m.devices()[dev].endpoint], 2.0 * 7 / 8 * static_cast<double>(op.bytes), 1.0);
  }
}

TEST(Collectives, BroadcastAndReduceAreChainsThatMoveTheMessageOverEveryHopOnce) {
  const hw::Machine m = hw::Machine::load(config_path("dgx_a100"));
  Dispatcher disp(m, KernelPolicy{});
  const std::vector<std::uint32_t> devices{0, 1, 2, 3, 4, 5, 6, 7};
  for (OpKind kind : {OpKind::broadcast, OpKind::reduce}) {
    OpDesc op;
    op.kind = kind;
    op.ranks = 8;
    op.bytes = 64ULL << 20;
    const CollectivePlan plan = disp.lower_collective(op, devices);
    EXPECT_EQ(plan.algorithm, "ring");
    std::vector<double> sent(m.endpoints().size(), 0), received(m.endpoints().size(), 0);
    for (const Transfer& t : plan.transfers) {
      sent[t.src_endpoint] += t.bytes;
      received[t.dst_endpoint] += t.bytes;
    }
    // Seven hops of a chain: every rank but the last sends the message once, every rank but the
    // first receives it once (broadcast from rank 0; reduce towards it, the other way round).
    const std::uint32_t first = m.devices()[0].endpoint, last = m.devices()[7].endpoint;
    const bool down = kind == OpKind::broadcast;
    EXPECT_EQ(sent[down ? last : first], 0.0);
    EXPECT_EQ(received[down ? first : last], 0.0);
    EXPECT_NEAR(sent[m.devices()[3].endpoint], static_cast<double>(op.bytes), 1.0);
    EXPECT_NEAR(received[m.devices()[3].endpoint], static_cast<double>(op.bytes), 1.0);
  }
  // Pipelined: a large message takes about one pass over a link, not seven (an all-gather moves
  // 7/8 of the same bytes over each link, so a broadcast takes 8/7 of its time and a little more
  // to fill the chain and pay each chunk's step); a tiny one pays the seven hops' latency.
  const double big = predict_s(m, [] {
    OpDesc op;
    op.kind = OpKind::broadcast;
    op.ranks = 8;
    op.bytes = 1ULL << 30;
    return op;
  }());
  OpDesc gather;
  gather.kind = OpKind::allgather;
  gather.ranks = 8;
  gather.bytes = 1ULL << 30;
  const double gather_s = predict_s(m, gather);
  EXPECT_GT(big, 8.0 / 7.0 * 0.95 * gather_s);
  EXPECT_LT(big, 1.5 * gather_s);
  OpDesc tiny;
  tiny.kind = OpKind::broadcast;
  tiny.ranks = 8;
  tiny.bytes = 8;
  EXPECT_GT(predict_s(m, tiny), 7 * 1.4e-6);  // the A100's Simple step latency, seven times
}

TEST(Collectives, InSwitchReductionOnlyWhereTheSwitchSupportsIt) {
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 1ULL << 30;
  Diagnostics d;
  const hw::Machine a100 = hw::Machine::load(config_path("dgx_a100"));
  Predictor refuse(a100, KernelPolicy::parse("allreduce=in_switch", d));
  EXPECT_THROW(refuse.predict(op), InputError);
  Predictor auto_a100(a100, KernelPolicy{});
  EXPECT_EQ(auto_a100.predict(op).plan->algorithm, "ring");
  const hw::Machine h100 = hw::Machine::load(config_path("dgx_h100"));
  Predictor nvls(h100, KernelPolicy{});
  Predictor ring(h100, KernelPolicy::parse("allreduce=ring", d));
  const Prediction fast = nvls.predict(op);
  EXPECT_EQ(fast.plan->algorithm, "in_switch");
  // Each rank's link carries (n+1)/n of the message each way at 0.85 of the ring's rate, against
  // 2(n-1)/n for a ring: 1.32 against 1.75 on 8 GPUs, the 480 against 370 GB/s nccl-tests reports.
  const double ratio = fast.time_s / ring.predict(op).time_s;
  EXPECT_GT(ratio, 0.72);
  EXPECT_LT(ratio, 0.80);
}

TEST(Collectives, NvlsBeatsRingOnEightH100sForLargeMessagesNotTinyOnes) {
  const hw::Machine h100 = hw::Machine::load(config_path("dgx_h100"));
  Diagnostics d;
  Predictor choose(h100, KernelPolicy{});
  Predictor nvls(h100, KernelPolicy::parse("allreduce=nvls", d));
  Predictor ring(h100, KernelPolicy::parse("allreduce=ring", d));
  ASSERT_TRUE(d.empty()) << d.to_string();
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 256ULL << 20;
  EXPECT_LT(nvls.predict(op).time_s, ring.predict(op).time_s);
  EXPECT_EQ(choose.predict(op).plan->algorithm, "in_switch");
  // 32 KiB: NVLS pays its 25 us of barriers through the switch; a ring in LL pays 14 steps of 0.6 us.
  op.bytes = 32ULL << 10;
  const Prediction small_nvls = nvls.predict(op), small_ring = ring.predict(op), small = choose.predict(op);
  EXPECT_GT(small_nvls.time_s, small_ring.time_s);
  EXPECT_EQ(small.plan->algorithm, "ring");
  EXPECT_EQ(small.plan->protocol, "ll");
  EXPECT_GT(small_nvls.time_s, 25e-6);
  // NCCL_ALGO's spellings in any case name the same algorithms.
  for (const char* text : {"allreduce=NVLS", "allreduce=CollNet", "allreduce=Ring:LL128", "allgather=RING"}) {
    Diagnostics spelled;
    const KernelPolicy p = KernelPolicy::parse(text, spelled);
    EXPECT_TRUE(spelled.empty()) << text << ": " << spelled.to_string();
  }
  Diagnostics upper;
  EXPECT_EQ(KernelPolicy::parse("allreduce=NVLS", upper).describe(), "allreduce=in_switch");
  EXPECT_EQ(KernelPolicy::parse("allreduce=Ring:LL128", upper).describe(), "allreduce=ring:ll128");
}

TEST(Collectives, EachProtocolPaysItsLatencyAndCarriesItsPayload) {
  // LL wins small messages by its latency, Simple large ones by its payload: an 8-byte LL line
  // carries 4 bytes of data, so LL moves each byte twice on the wire.
  const hw::Machine h100 = hw::Machine::load(config_path("dgx_h100"));
  Diagnostics d;
  Predictor ll(h100, KernelPolicy::parse("allreduce=ring:ll", d));
  Predictor simple(h100, KernelPolicy::parse("allreduce=ring:simple", d));
  ASSERT_TRUE(d.empty()) << d.to_string();
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 8ULL << 10;
  EXPECT_LT(ll.predict(op).time_s, simple.predict(op).time_s);
  op.bytes = 1ULL << 30;
  const Prediction big_ll = ll.predict(op), big_simple = simple.predict(op);
  EXPECT_EQ(big_ll.plan->protocol, "ll");
  double wire_ll = 0, wire_simple = 0;
  for (const Transfer& t : big_ll.plan->transfers) wire_ll += t.bytes;
  for (const Transfer& t : big_simple.plan->transfers) wire_simple += t.bytes;
  EXPECT_NEAR(wire_ll / wire_simple, 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(big_ll.plan->bytes_per_rank, big_simple.plan->bytes_per_rank);
  EXPECT_GT(big_ll.time_s, 1.8 * big_simple.time_s);
  // A protocol the library lacks is refused as the machine is met, whether or not a collective of
  // that kind runs; one an algorithm cannot run in when the collective is lowered. Both name the
  // policy entry.
  auto error_of = [&](const std::string& policy) -> std::string {
    try {
      Predictor p(h100, KernelPolicy::parse(policy, d));
      p.predict(op);
    } catch (const InputError& e) {
      return e.diagnostics().to_string();
    }
    return "";
  };
  EXPECT_NE(error_of("allgather=ring:ll64").find("allgather=ring:ll64: the collective library of gpu[0] "
                                                 "(" + config_path("dgx_h100") + ") has no protocol \"ll64\" (it has: "
                                                 "simple, ll, ll128)"), std::string::npos);
  EXPECT_NE(error_of("allreduce=nvls:ll").find("policy allreduce=in_switch:ll: in_switch runs in the simple protocol only"),
            std::string::npos) << error_of("allreduce=nvls:ll");
  OpDesc a2a;
  a2a.kind = OpKind::alltoall;
  a2a.ranks = 8;
  a2a.bytes = 1 << 20;
  try {
    Predictor p(h100, KernelPolicy::parse("alltoall=auto:ll", d));
    p.predict(a2a);
    ADD_FAILURE() << "all-to-all runs in simple only";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("policy alltoall=auto:ll: no alltoall algorithm runs in the ll protocol"),
              std::string::npos) << e.diagnostics().to_string();
  }
}

TEST(Collectives, AProtocolsChannelsBoundWhatARankSendsInIt) {
  // LL's 16 channels push at most 16 x 17.6 GB/s on the wire, half of it data: a large LL ring on
  // 8 H100s moves its data at no more than 141 GB/s of bus bandwidth, though NVLink carries 360.
  const hw::Machine h100 = hw::Machine::load(config_path("dgx_h100"));
  Diagnostics d;
  Predictor ll(h100, KernelPolicy::parse("allreduce=ring:ll", d));
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 1ULL << 30;
  const double bus_bytes_per_s = 2.0 * 7 / 8 * static_cast<double>(op.bytes) / ll.predict(op).time_s;
  EXPECT_LT(bus_bytes_per_s, 16 * 17.6e9 * 0.5 * 1.001);
  EXPECT_GT(bus_bytes_per_s, 0.8 * 16 * 17.6e9 * 0.5);
}

TEST(Executor, ConcurrentMemoryBoundKernelsShareHbm) {
  // Two kernels of 50 memory-bound CTAs each fit side by side on 108 SMs, so they run at the same
  // time and split the HBM bandwidth: together they take about twice as long as one alone.
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Kernel k;
  k.name = "stream";
  k.tiles = 50;
  k.tile_compute_s = 1e-6;
  k.tile_hbm_bytes = 10e6;
  k.hbm_bytes = 500e6;
  sim::Simulator sim;
  hw::SimMachine hw(sim, m);
  Executor ex(hw);
  KernelRun alone;
  ex.launch(k, alone, nullptr, nullptr, 0);
  sim.run();
  const double t_alone = static_cast<double>(alone.end_ps - alone.start_ps);
  EXPECT_EQ(alone.units, 50u);
  KernelRun a, b;
  ex.launch(k, a, nullptr, nullptr, 0);
  ex.launch(k, b, nullptr, nullptr, 0);
  sim.run();
  EXPECT_EQ(a.start_ps, b.start_ps);  // both got their SMs at once
  EXPECT_NEAR(static_cast<double>(a.end_ps - a.start_ps) / t_alone, 2.0, 0.05);
  EXPECT_NEAR(static_cast<double>(b.end_ps - b.start_ps) / t_alone, 2.0, 0.05);
}

// Starts kernel k at 0 and, `second_at_ps` later, the same kernel again on the same device; returns
// both runs. With `closed_form` the first runs solo until the second arrives.
std::pair<KernelRun, KernelRun> two_kernels(const hw::Machine& m, const Kernel& k, sim::TimePs second_at_ps,
                                            bool closed_form, std::uint64_t* converted) {
  sim::Simulator sim;
  hw::SimMachine hw(sim, m);
  Executor ex(hw);
  ex.set_closed_form(closed_form);
  KernelRun a, b;
  struct Later {
    Executor* ex;
    const Kernel* k;
    KernelRun* run;
    static void go(void* obj, std::uint64_t) {
      auto* l = static_cast<Later*>(obj);
      l->ex->launch(*l->k, *l->run, nullptr, nullptr, 0);
    }
  } later{&ex, &k, &b};
  ex.launch(k, a, nullptr, nullptr, 0);
  sim.at(second_at_ps, &Later::go, &later, 0);
  sim.run();
  if (converted) *converted = ex.converted_kernels();
  return {a, b};
}

TEST(Executor, ASoloKernelConvertedMidPhaseEndsWhenTheFlowPathWould) {
  // The closed form is exact: a solo kernel that another kernel joins part way through (in its
  // overhead, in its first phase, in its last) ends, with its compute and memory times, exactly
  // when the same kernel run through SMs and HBM flows from the start does.
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Kernel k;
  k.name = "stream";
  k.tiles = 300;  // more CTAs than slots: a full-waves phase and a partial last one
  k.tiles_per_unit = 2;
  k.tile_compute_s = 2e-6;
  k.tile_hbm_bytes = 4e6;
  k.hbm_bytes = 1.2e9;
  for (sim::TimePs at : {sim::TimePs{1'000'000}, sim::TimePs{200'000'000}, sim::TimePs{600'000'000}}) {
    std::uint64_t converted = 0;
    const auto [a, b] = two_kernels(m, k, at, true, &converted);
    const auto [fa, fb] = two_kernels(m, k, at, false, nullptr);
    EXPECT_EQ(converted, 1u) << at;
    EXPECT_NEAR(static_cast<double>(a.end_ps), static_cast<double>(fa.end_ps), 2.0) << at;
    EXPECT_NEAR(static_cast<double>(b.end_ps), static_cast<double>(fb.end_ps), 2.0) << at;
    EXPECT_NEAR(static_cast<double>(a.memory_ps), static_cast<double>(fa.memory_ps), 2.0) << at;
    EXPECT_NEAR(static_cast<double>(a.compute_ps), static_cast<double>(fa.compute_ps), 2.0) << at;
    EXPECT_GT(b.end_ps, at);
  }
}

TEST(Executor, SmallGridsSpreadOverUnitsBeforeStacking) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc gelu;
  gelu.kind = OpKind::gelu;
  gelu.elements = 108 * 4096;
  EXPECT_EQ(p.predict(gelu).runs[0].units, 108u);
}

TEST(Collectives, ConcurrentAllReducesShareTheLinks) {
  const hw::Machine m = hw::Machine::load(config_path("dgx_a100"));
  Diagnostics d;
  Dispatcher disp(m, KernelPolicy::parse("allreduce=ring", d));
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 1ULL << 30;
  const std::vector<std::uint32_t> devices{0, 1, 2, 3, 4, 5, 6, 7};
  const CollectivePlan plan = disp.lower_collective(op, devices);
  sim::Simulator sim;
  hw::SimMachine hw(sim, m);
  Executor ex(hw);
  ex.run_collective(plan, nullptr, nullptr, 0);
  sim.run();
  const double one = static_cast<double>(sim.now());
  const sim::TimePs start = sim.now();
  ex.run_collective(plan, nullptr, nullptr, 0);
  ex.run_collective(plan, nullptr, nullptr, 0);
  sim.run();
  EXPECT_NEAR(static_cast<double>(sim.now() - start) / one, 2.0, 0.1);
}

TEST(Executor, AChunkThatOnlyFollowsAnotherPaysNoSynchronisation) {
  // Two 1 MB transfers gpu[0] -> gpu[1] on a 1 TB/s link with a 1 us route and a 5 us step
  // latency: as data dependencies the second starts 5 us after the first arrives; following it,
  // as soon as it has arrived.
  const hw::Machine m = hw::Machine::load(config_path("dgx_h100"),
                                          {{"/components/nvlink/bandwidth", "1 TB/s"},
                                           {"/components/nvlink/efficiency", "1"},
                                           {"/components/gpu/components/nccl/channel_bandwidth", "1 TB/s"}});
  const std::uint32_t a = m.devices()[0].endpoint, b = m.devices()[1].endpoint;
  auto run = [&](bool follows) {
    CollectivePlan plan;
    plan.step_latency_s = 5e-6;
    plan.transfers.resize(2);
    for (Transfer& t : plan.transfers) {
      t.src_endpoint = a;
      t.dst_endpoint = b;
      t.bytes = 1e6;
    }
    if (follows) {
      plan.transfers[1].follows = 0;
    } else {
      plan.transfers[1].deps.push_back(0);
    }
    sim::Simulator sim;
    hw::SimMachine hw(sim, m);
    Executor ex(hw);
    ex.run_collective(plan, nullptr, nullptr, 0);
    sim.run();
    return static_cast<double>(sim.now()) * 1e-12;
  };
  const double route_s = m.route(a, b).latency_s;
  const double one_s = route_s + 1e6 / 1e12;
  EXPECT_NEAR(run(false), 5e-6 + one_s + 5e-6 + one_s, 1e-12);
  EXPECT_NEAR(run(true), 5e-6 + one_s + one_s, 1e-12);
}

TEST(Collectives, TheLibrarysChannelsBoundWhatARankSends) {
  // One channel of 10 GB/s per rank: bus bandwidth cannot exceed it, even with steps overlapping.
  const hw::Machine m = hw::Machine::load(config_path("dgx_a100"), {{"/components/gpu/components/nccl/channels", "1"},
                                                                      {"/components/gpu/components/nccl/channel_bandwidth", "10 GB/s"}});
  Predictor p(m, KernelPolicy{});
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = 1ULL << 30;
  const Prediction r = p.predict(op);
  EXPECT_LE(r.plan->bytes_per_rank / r.time_s, 10e9 * 1.001);
  EXPECT_GT(r.plan->bytes_per_rank / r.time_s, 9e9);
}

TEST(Predictor, HostTimingAddsDispatchLaunchAndSync) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc tiny = gemm(16, 16, 16);
  const Prediction dev = p.predict(tiny, Timing::device);
  const Prediction host = p.predict(tiny, Timing::host);
  const hw::HostSpec& h = m.hosts()[0].spec;
  EXPECT_NEAR(host.time_s - dev.time_s, h.op_dispatch_s + h.kernel_launch_s + h.launch_latency_s + h.sync_latency_s, 1e-9);
  EXPECT_EQ(host.bound, "launch");
}

TEST(Predictor, EventsTimingShowsTheHostWorkBetweenTheRecordsOnly) {
  // CUDA events around one call on an idle stream: both records pay the launch latency, so what
  // separates them is the host's dispatch and launch call; the synchronisation comes after.
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc tiny = gemm(16, 16, 16);
  const Prediction dev = p.predict(tiny, Timing::device);
  const Prediction events = p.predict(tiny, Timing::events);
  const hw::HostSpec& h = m.hosts()[0].spec;
  EXPECT_NEAR(events.time_s - dev.time_s, h.op_dispatch_s + h.kernel_launch_s, 1e-12);
  EXPECT_NEAR(events.events_overhead_s, h.op_dispatch_s + h.kernel_launch_s, 1e-12);
  EXPECT_EQ(events.bound, "launch");
  EXPECT_EQ(parse_timing("events"), Timing::events);
  EXPECT_FALSE(parse_timing("wall"));
}

TEST(Predictor, HostTimingPacesSeveralKernelsByTheirLaunches) {
  // Three tiny unfused-attention kernels: each starts when launched (plus the latency) or when
  // the previous one ends, whichever is later.
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Diagnostics d;
  Predictor p(m, KernelPolicy::parse("attention=unfused", d));
  OpDesc op;
  op.kind = OpKind::attention;
  op.batch = op.heads = op.kv_heads = 1;
  op.seq_q = op.seq_kv = 16;
  op.head_dim = 64;
  const Prediction r = p.predict(op, Timing::host);
  ASSERT_EQ(r.runs.size(), 3u);
  const hw::HostSpec& h = m.hosts()[0].spec;
  double end = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const double ready = h.op_dispatch_s + static_cast<double>(i + 1) * h.kernel_launch_s + h.launch_latency_s;
    end = std::max(ready, end) + static_cast<double>(r.runs[i].end_ps - r.runs[i].start_ps) * 1e-12;
  }
  EXPECT_NEAR(r.time_s, end + h.sync_latency_s, 1e-12);
}

TEST(Attention, DecodeCostDoesNotJumpWithTheQueryGroup) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  Predictor p(m, KernelPolicy{});
  OpDesc op;
  op.kind = OpKind::attention;
  op.batch = 1;
  op.kv_heads = 1;
  op.seq_q = 1;
  op.seq_kv = 32768;
  op.head_dim = 128;
  op.heads = 64;
  const double mqa64 = p.predict(op).time_s;
  op.heads = 128;
  const double mqa128 = p.predict(op).time_s;
  EXPECT_LT(mqa128 / mqa64, 1.5);  // still reading the same KV cache
}

TEST(GemmTiler, SmallTilesPayForTheirL2Feed) {
  // A tiny tile shape has to fetch far more A/B data per FLOP from L2 than a real one.
  const hw::Machine real = hw::Machine::load(config_path("a100_sxm4_80gb"));
  const hw::Machine tiny = hw::Machine::load(config_path("a100_sxm4_80gb"),
                                             {{"/components/gpu/components/sm/gemm_tiles", R"(["8x8x8"])"}});
  EXPECT_GT(predict_s(tiny, gemm(4096, 4096, 4096)), 4 * predict_s(real, gemm(4096, 4096, 4096)));
}

TEST(GemmTiler, SmallTilesOnEveryUnitShareTheL2sAggregateBandwidth) {
  // A100: each SM's own L2 port is 64 B a clock (90 GB/s), but the L2 delivers 5120 B a clock in
  // all (7.2 TB/s, 66.8 GB/s an SM when all 108 pull). 64x64 tiles need about 85 GB/s an SM at
  // the matrix rate: alone on a few SMs they are math-bound; on every SM they wait on their share.
  const std::string tiles = "/components/gpu/components/sm/gemm_tiles";
  const std::string l2 = "/components/gpu/components/l2/bandwidth";
  const hw::Machine shared = hw::Machine::load(config_path("a100_sxm4_80gb"), {{tiles, R"(["64x64x32"])"}});
  const hw::Machine unlimited =
      hw::Machine::load(config_path("a100_sxm4_80gb"), {{tiles, R"(["64x64x32"])"}, {l2, "1000 TB/s"}});
  auto why = [](const Prediction& x) {
    std::string text;
    for (const auto& line : x.kernels.at(0).why) text += line + "\n";
    return text;
  };
  Diagnostics d;
  const KernelPolicy tiled = KernelPolicy::parse("gemm=tiled", d);
  Predictor ps(shared, tiled), pu(unlimited, tiled);
  const OpDesc full = gemm(64 * 108, 64 * 8, 8192);  // 864 tiles: 8 full waves
  const Prediction f = ps.predict(full);
  EXPECT_NE(why(f).find("L2-feed-bound; its feed is its share of the L2's 7.22 TB/s over 108 tiles"), std::string::npos) << why(f);
  EXPECT_NEAR(f.time_s / pu.predict(full).time_s, 85.0 / 66.8, 0.08);
  const OpDesc few = gemm(64 * 16, 64, 8192);  // 16 tiles: each SM's own port, no sharing
  const Prediction w = ps.predict(few);
  EXPECT_NE(why(w).find("math-bound"), std::string::npos) << why(w);
  EXPECT_NEAR(w.time_s / pu.predict(few).time_s, 1.0, 0.01);
  // A grouped GEMM's groups share the waves, and so the L2: 16 groups of 7 x 8 tiles pay what
  // the one GEMM of their 896 tiles pays, not each group's share over its own 56.
  OpDesc grouped = gemm(16 * 448, 512, 8192);
  grouped.kind = OpKind::grouped_gemm;
  grouped.batch = 16;
  const Prediction g = ps.predict(grouped);
  EXPECT_NE(why(g).find("over 108 tiles in flight"), std::string::npos) << why(g);
  EXPECT_NEAR(g.time_s / ps.predict(gemm(16 * 448, 512, 8192)).time_s, 1.0, 0.02);
}

TEST(Dispatcher, RecordsWhyEachKernelWasChosen) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  Dispatcher disp(m, KernelPolicy{});
  const auto ks = disp.lower(gemm(4096, 4096, 4096), 0);
  ASSERT_EQ(ks.size(), 1u);
  std::string why;
  for (const auto& w : ks[0].why) why += w + "\n";
  EXPECT_NE(why.find("policy gemm=auto"), std::string::npos) << why;
  EXPECT_NE(why.find("waves on 108 units"), std::string::npos) << why;
  EXPECT_NE(why.find("fp16 on matrix units"), std::string::npos) << why;
  EXPECT_NE(why.find("math-bound"), std::string::npos) << why;
  EXPECT_NE(why.find("on the devices of /"), std::string::npos) << why;  // the group sharing these kernels
}

TEST(Shapes, BadShapesAreClearErrors) {
  struct Case {
    OpDesc op;
    std::string message;
  };
  OpDesc zero = gemm(0, 10, 10);
  OpDesc huge = gemm(1ULL << 40, 1ULL << 40, 16);
  OpDesc gqa;
  gqa.kind = OpKind::attention;
  gqa.batch = 1;
  gqa.heads = 10;
  gqa.kv_heads = 4;
  gqa.seq_q = gqa.seq_kv = 128;
  gqa.head_dim = 64;
  OpDesc one_rank;
  one_rank.kind = OpKind::allreduce;
  one_rank.ranks = 1;
  one_rank.bytes = 100;
  for (const auto& c : std::vector<Case>{{zero, "gemm needs m > 0"},
                                         {huge, "overflows"},
                                         {gqa, "heads (10) must be a multiple of kv-heads (4)"},
                                         {one_rank, "allreduce needs ranks >= 2"}}) {
    Diagnostics d;
    EXPECT_FALSE(validate_op(c.op, d, "test"));
    EXPECT_NE(d.to_string().find(c.message), std::string::npos) << d.to_string();
  }
}

TEST(Policy, ParsesCliFilesAndRejectsUnknownNames) {
  Diagnostics d;
  const KernelPolicy p = KernelPolicy::parse("attention=flash_v2,gemm=cublasLt:bf16,allreduce=ring", d);
  EXPECT_TRUE(d.empty()) << d.to_string();
  EXPECT_EQ(p.entry(OpKind::attention).impl, "flash_v2");
  EXPECT_EQ(p.entry(OpKind::gemm).precision, DType::bf16);
  EXPECT_EQ(p.entry(OpKind::softmax).impl, "auto");
  Diagnostics bad;
  KernelPolicy::parse("atention=flash_v2,gemm=cublaslt,allreduce", bad);
  const std::string text = bad.to_string();
  EXPECT_NE(text.find("unknown op \"atention\", did you mean \"attention\"?"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown implementation \"cublaslt\" for gemm, did you mean \"cublasLt\"? (valid: auto, cublasLt, tiled, splitk, gemv)"),
            std::string::npos) << text;
  // Other runtimes' names for implementations: cuBLAS's own choice is auto's, as is PyTorch's attention.
  Diagnostics aliases;
  const KernelPolicy a = KernelPolicy::parse("gemm=cublas,bmm=cublas,attention=torch", aliases);
  EXPECT_TRUE(aliases.empty()) << aliases.to_string();
  EXPECT_EQ(a.entry(OpKind::gemm).impl, "auto");
  EXPECT_EQ(a.entry(OpKind::attention).impl, "auto");
  EXPECT_NE(text.find("expected op=implementation"), std::string::npos) << text;
  const auto dir = std::filesystem::temp_directory_path();
  std::ofstream(dir / "policy.yaml") << "gemm: tiled\nattention:\n  impl: unfused\n  precision: bf16\n";
  std::ofstream(dir / "policy.json") << R"({"allreduce": "tree", "softmax": {"impl": "fused", "colour": 1}})";
  Diagnostics f;
  const KernelPolicy y = KernelPolicy::load_file((dir / "policy.yaml").string(), f);
  EXPECT_TRUE(f.empty()) << f.to_string();
  EXPECT_EQ(y.entry(OpKind::attention).impl, "unfused");
  EXPECT_EQ(y.entry(OpKind::attention).precision, DType::bf16);
  Diagnostics missing;
  KernelPolicy::load("no-such-policy.yaml", missing, "--policy", dir.string());
  EXPECT_NE(missing.to_string().find("no such file: "), std::string::npos) << missing.to_string();
  const KernelPolicy j = KernelPolicy::load_file((dir / "policy.json").string(), f);
  EXPECT_EQ(j.entry(OpKind::allreduce).impl, "tree");
  EXPECT_NE(f.to_string().find("/softmax/colour: unknown key \"colour\""), std::string::npos) << f.to_string();
  std::ofstream(dir / "bad.yaml") << "? [gemm]\n: tiled\ngemm: tiled\ngemm: splitk\nattention: {impl: [flash_v2]}\n";
  Diagnostics b;
  KernelPolicy::load_file((dir / "bad.yaml").string(), b);
  const std::string bt = b.to_string();
  EXPECT_NE(bt.find("expected an op name as the key, got a list"), std::string::npos) << bt;
  EXPECT_NE(bt.find("bad.yaml:4:/gemm: key \"gemm\" given twice (first at line 3)"), std::string::npos) << bt;
  EXPECT_NE(bt.find("/attention/impl: expected a name, got a list or map"), std::string::npos) << bt;
  // A collective's suffix is the library's protocol (NCCL_PROTO's names in any case), not a precision.
  Diagnostics c;
  const KernelPolicy lp = KernelPolicy::parse("allreduce=ring:LL128,allgather=auto:simple", c);
  EXPECT_TRUE(c.empty()) << c.to_string();
  EXPECT_EQ(lp.entry(OpKind::allreduce).protocol, "ll128");
  EXPECT_FALSE(lp.entry(OpKind::allreduce).precision);
  EXPECT_EQ(lp.describe(), "allreduce=ring:ll128,allgather=auto:simple");
  std::ofstream(dir / "proto.yaml") << "allreduce: {impl: ring, precision: bf16}\ngemm: {impl: tiled, protocol: ll}\n";
  Diagnostics e;
  KernelPolicy::load_file((dir / "proto.yaml").string(), e);
  EXPECT_NE(e.to_string().find("/allreduce/precision: allreduce moves data as it is: it has a protocol"), std::string::npos)
      << e.to_string();
  EXPECT_NE(e.to_string().find("/gemm/protocol: gemm is not a collective"), std::string::npos) << e.to_string();
}

TEST(KernelPolicy, AnOpGivenTwiceIsAnError) {
  Diagnostics d;
  KernelPolicy::parse("gemm=tiled,attention=flash_v2,gemm=gemv", d);
  EXPECT_EQ(d.to_string(), "--policy: gemm given twice\n");
}

TEST(CollectiveRules, DirectAllReduceOnAFullMeshUsesEveryLinkAtOnce) {
  // Eight MI300X, one 64 GB/s link per pair: a ring uses one link per step, the direct
  // reduce-scatter and all-gather use all seven at once.
  const hw::Machine mesh = hw::Machine::load(config_path("mi300x_x8"));
  OpDesc op;
  op.kind = OpKind::allreduce;
  op.ranks = 8;
  op.bytes = std::uint64_t{1} << 30;
  const double ring = predict_s(mesh, op, "allreduce=ring");
  const double direct = predict_s(mesh, op, "allreduce=direct");
  EXPECT_GT(ring / direct, 4.0);
  Diagnostics d;
  Predictor automatic(mesh, KernelPolicy::parse("", d));
  EXPECT_EQ(automatic.predict(op).plan->algorithm, "direct");
  // Behind a switch every send of a rank shares its one link: direct is not offered there.
  const hw::Machine switched = hw::Machine::load(config_path("dgx_h100"));
  Predictor on_switch(switched, KernelPolicy::parse("", d));
  EXPECT_NE(on_switch.predict(op).plan->algorithm, "direct");
  Predictor forced(switched, KernelPolicy::parse("allreduce=direct", d));
  EXPECT_THROW(forced.predict(op), InputError);
}

}  // namespace
}  // namespace syntorch::runtime
