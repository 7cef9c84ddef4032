// FlashAttention by mechanism: the matrix products, the exponentials on the special-function
// units and the other softmax work, added up by FlashAttention-2 (with synchronous mma on Hopper)
// and overlapped by FlashAttention-3.

#include <gtest/gtest.h>

#include "predict_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime_testing::config;
using runtime_testing::policy;

runtime::OpDesc prefill(std::uint64_t head_dim) {
  runtime::OpDesc op;
  op.kind = runtime::OpKind::attention;
  op.batch = 4;
  op.heads = 4096 / head_dim;
  op.kv_heads = op.heads;
  op.seq_q = op.seq_kv = 8192;
  op.head_dim = head_dim;
  return op;
}

double time_s(const hw::Machine& m, const std::string& impl, std::uint64_t head_dim) {
  runtime::Predictor p(m, policy("attention=" + impl));
  return p.predict(prefill(head_dim)).time_s;
}

std::string why(const hw::Machine& m, const std::string& impl, std::uint64_t head_dim) {
  runtime::Predictor p(m, policy("attention=" + impl));
  const runtime::Prediction prediction = p.predict(prefill(head_dim));
  std::string text;
  for (const auto& line : prediction.kernels.at(0).why) text += line + "\n";
  return text;
}

const std::string kSm = "/components/gpu/components/sm/";

TEST(FlashAttention, V3BeatsV2OnH100ByTheOverlapAndTheAsynchronousMatrixUnitsNotAConstant) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  const double v2 = time_s(h100, "flash_v2", 128), v3 = time_s(h100, "flash_v3", 128);
  EXPECT_GT(v2, 1.5 * v3);  // FlashAttention-3 paper: 1.5-2x faster forward (648 against 370 TFLOPS here)
  EXPECT_LT(v2, 2.0 * v3);
  // With synchronous mma at the full rate, v2 still adds the softmax to the products: slower, less so.
  const hw::Machine full_sync = hw::Machine::load(config("h100_sxm5_80gb.json"), {{kSm + "sync_matrix_efficiency", "1"}});
  const double v2_full = time_s(full_sync, "flash_v2", 128);
  EXPECT_GT(v2_full, 1.1 * v3);
  EXPECT_LT(v2_full, 0.7 * v2);
  // With (nearly) free softmax work there is nothing to overlap: v2 and v3 take the same time.
  const hw::Machine free_softmax = hw::Machine::load(
      config("h100_sxm5_80gb.json"),
      {{kSm + "sync_matrix_efficiency", "1"}, {kSm + "special_ops_per_cycle", "1e6"},
       {kSm + "vector_ops_per_cycle", "{\"fp32\": 1e7, \"fp64\": 138.5, \"fp16\": 512, \"bf16\": 512}"}});
  EXPECT_NEAR(time_s(free_softmax, "flash_v2", 128) / time_s(free_softmax, "flash_v3", 128), 1.0, 0.01);
}

TEST(FlashAttention, SmallHeadsAreExponentialBoundLargeOnesMatrixBound) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  // head_dim 64: 256 matrix FLOPs a score against one exponential at 16 a clock per SM.
  EXPECT_NE(why(h100, "flash_v3", 64).find("exponential-bound"), std::string::npos) << why(h100, "flash_v3", 64);
  EXPECT_NE(why(h100, "flash_v3", 128).find("matrix-bound"), std::string::npos) << why(h100, "flash_v3", 128);
  // More exponentials a clock lift an exponential-bound kernel more than a matrix-bound one,
  // which gains only the part of its softmax the ping-pong leaves exposed; fully hidden, nothing.
  const hw::Machine faster_exp = hw::Machine::load(config("h100_sxm5_80gb.json"), {{kSm + "special_ops_per_cycle", "64"}});
  const double gain_64 = time_s(h100, "flash_v3", 64) / time_s(faster_exp, "flash_v3", 64);
  const double gain_128 = time_s(h100, "flash_v3", 128) / time_s(faster_exp, "flash_v3", 128);
  EXPECT_GT(gain_64, 1.03);
  EXPECT_GT(gain_64, gain_128);
  const std::string all_hidden = kSm + "async_softmax_overlap";
  const hw::Machine hidden = hw::Machine::load(config("h100_sxm5_80gb.json"), {{all_hidden, "1"}});
  const hw::Machine hidden_fast = hw::Machine::load(config("h100_sxm5_80gb.json"),
                                                    {{all_hidden, "1"}, {kSm + "special_ops_per_cycle", "64"}});
  EXPECT_NEAR(time_s(hidden_fast, "flash_v3", 128) / time_s(hidden, "flash_v3", 128), 1.0, 1e-9);
  // B200 doubled the matrix rate, not the exponentials: head_dim 128 is exponential-bound there.
  const hw::Machine b200 = hw::Machine::load(config("b200_sxm.json"));
  EXPECT_NE(why(b200, "flash_v3", 128).find("exponential-bound"), std::string::npos) << why(b200, "flash_v3", 128);
}

}  // namespace

namespace {

TEST(MemoryEfficientAttention, Fp32RunsFusedOnTheVectorUnitsAndUnfusedOnlyWhenAsked) {
  // No fp32 matrix units: auto runs PyTorch's memory-efficient kernel (FlashAttention's blocking,
  // the products on the fp32 vector units, no score matrix in HBM), forward and backward.
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::OpDesc op = prefill(64);
  op.dtype = DType::fp32;
  op.seq_q = op.seq_kv = 2048;
  runtime::Predictor p(m, policy(""));
  const runtime::Prediction forward = p.predict(op);
  ASSERT_EQ(forward.kernels.size(), 1u);
  EXPECT_EQ(forward.kernels[0].impl, "mem_efficient");
  std::string why;
  for (const auto& line : forward.kernels[0].why) why += line + "\n";
  EXPECT_NE(why.find("the products on the fp32 vector units"), std::string::npos) << why;
  // The unfused path (PyTorch's math path) writes the score matrix to HBM: slower at this length.
  runtime::Predictor math(m, policy("attention=unfused,attention_backward=unfused"));
  const runtime::Prediction unfused = math.predict(op);
  ASSERT_EQ(unfused.kernels.size(), 3u);
  EXPECT_GT(unfused.time_s, forward.time_s);
  op.kind = runtime::OpKind::attention_backward;
  const runtime::Prediction backward = p.predict(op);
  ASSERT_EQ(backward.kernels.size(), 3u);  // D, the main kernel, dQ's conversion
  EXPECT_EQ(backward.kernels[1].impl, "mem_efficient");
  // Unfused, autograd through the forward's ops: four products and the softmax's backward from
  // the probabilities kept in HBM.
  const runtime::Prediction through_hbm = math.predict(op);
  ASSERT_EQ(through_hbm.kernels.size(), 5u);
  EXPECT_NE(through_hbm.kernels[2].name.find("softmax"), std::string::npos);
  std::string hbm_why;
  for (const auto& line : through_hbm.kernels[0].why) hbm_why += line + "\n";
  EXPECT_NE(hbm_why.find("probabilities kept in HBM"), std::string::npos) << hbm_why;
  // Under GQA the per-query-head dK and dV are summed over each group of heads: one more kernel.
  op.kv_heads = op.heads / 4;
  const runtime::Prediction grouped = math.predict(op);
  ASSERT_EQ(grouped.kernels.size(), 6u);
  EXPECT_NE(grouped.kernels[5].name.find("summed over each head group"), std::string::npos);
  op.kv_heads = op.heads;
  // FlashAttention itself needs the dtype's matrix units.
  runtime::Predictor flash(m, policy("attention_backward=flash_v2"));
  EXPECT_THROW(flash.predict(op), std::exception);
}

}  // namespace
