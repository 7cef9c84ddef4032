// The kernels Llama-family models add: RMSNorm in its three forms, rotary embedding and SwiGLU
// fused or as PyTorch's composition; what each reads and writes decides its order.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::runtime {
namespace {

std::string config_path(const std::string& name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / (name + ".json")).string();
}

OpDesc op(const std::string& kind, const std::map<std::string, std::string>& params) {
  OpDesc o;
  o.kind = *parse_op(kind);
  Diagnostics d;
  EXPECT_TRUE(op_from_params(params, {}, o, d, "test")) << d.to_string();
  return o;
}

Prediction predict(const hw::Machine& m, const OpDesc& o, const std::string& policy) {
  Diagnostics d;
  Predictor p(m, KernelPolicy::parse(policy, d));
  EXPECT_TRUE(d.empty()) << d.to_string();
  return p.predict(o);
}

double hbm_bytes(const Prediction& p) {
  double b = 0;
  for (const auto& k : p.kernels) b += k.hbm_bytes;
  return b;
}

TEST(RmsNorm, EagerComposesEightKernelsTorchTwoFusedOneAndTheyRankSo) {
  const hw::Machine m = hw::Machine::load(config_path("a100_sxm4_80gb"));
  const OpDesc norm = op("rmsnorm", {{"rows", "4096"}, {"cols", "4096"}, {"dtype", "bf16"}});
  const Prediction eager = predict(m, norm, "rmsnorm=eager");
  const Prediction torch = predict(m, norm, "rmsnorm=torch");
  const Prediction fused = predict(m, norm, "rmsnorm=fused");
  EXPECT_EQ(eager.kernels.size(), 8u);
  EXPECT_EQ(torch.kernels.size(), 2u);
  EXPECT_EQ(fused.kernels.size(), 1u);
  EXPECT_GT(eager.time_s, 2 * torch.time_s);
  EXPECT_GT(torch.time_s, fused.time_s);
  // One read and one write of bf16 for the fused kernel; eager moves fp32 intermediates.
  const double tensor_bytes = 4096.0 * 4096 * 2;
  EXPECT_NEAR(hbm_bytes(fused), 2 * tensor_bytes, 0.01 * tensor_bytes);
  EXPECT_GT(hbm_bytes(eager), 8 * tensor_bytes);
  EXPECT_EQ(predict(m, norm, "").kernels.size(), 1u);  // auto: the fastest
}

TEST(RmsNorm, AFusedRowThatFitsOnChipIsReadOnceWithFewerCtasPerUnit) {
  // A 32768-element bf16 row needs 128 KiB in fp32: three such CTAs fit in an H100 SM's 228 KiB
  // of shared memory and 256 KiB of registers, so each row is read from HBM once. A row of 2^18
  // elements (1 MiB in fp32) fits no SM: it is read twice.
  const hw::Machine h100 = hw::Machine::load(config_path("h100_sxm5_80gb"));
  const Prediction fits = predict(h100, op("rmsnorm", {{"rows", "1024"}, {"cols", "32768"}, {"dtype", "bf16"}}),
                                  "rmsnorm=fused");
  ASSERT_EQ(fits.kernels.size(), 1u);
  EXPECT_EQ(fits.kernels[0].tiles_per_unit, 3u);
  EXPECT_DOUBLE_EQ(hbm_bytes(fits), 2.0 * 1024 * 32768 * 2);
  const Prediction small = predict(h100, op("rmsnorm", {{"rows", "4096"}, {"cols", "4096"}, {"dtype", "bf16"}}),
                                   "rmsnorm=fused");
  EXPECT_EQ(small.kernels[0].tiles_per_unit, h100.devices()[0].compute.resident_tiles_per_unit);
  const Prediction huge = predict(h100, op("rmsnorm", {{"rows", "512"}, {"cols", "262144"}, {"dtype", "bf16"}}),
                                  "rmsnorm=fused");
  EXPECT_EQ(huge.kernels[0].tiles_per_unit, 1u);
  EXPECT_GT(hbm_bytes(huge), 2.0 * 512 * 262144 * 2);  // 256 MiB of rows in flight exceed the L2
  // With (almost) no register file, shared memory alone holds one such row per unit.
  const hw::Machine smem_only =
      hw::Machine::load(config_path("h100_sxm5_80gb"), {{"/components/gpu/components/sm/register_file", "1 KiB"}});
  const Prediction less = predict(smem_only, op("rmsnorm", {{"rows", "1024"}, {"cols", "32768"}, {"dtype", "bf16"}}),
                                  "rmsnorm=fused");
  EXPECT_EQ(less.kernels[0].tiles_per_unit, 1u);
}

TEST(Rope, FusedRotatesQueriesAndKeysInPlaceInOnePass) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  const OpDesc rope = op("rope", {{"tokens", "8192"}, {"heads", "32"}, {"kv_heads", "8"}, {"head_dim", "128"}});
  const Prediction fused = predict(m, rope, "rope=fused");
  const Prediction eager = predict(m, rope, "rope=eager");
  ASSERT_EQ(fused.kernels.size(), 1u);
  EXPECT_GT(eager.kernels.size(), 8u);  // neg, cat, two muls and an add for each of q and k
  EXPECT_GT(eager.time_s, 3 * fused.time_s);
  // q and k (40 heads of 128) read and written once, plus the cos/sin table.
  const double qk_bytes = 8192.0 * 40 * 128 * 2;
  EXPECT_GE(hbm_bytes(fused), 2 * qk_bytes);
  EXPECT_LT(hbm_bytes(fused), 2.3 * qk_bytes);
  // Partial rotary (GPT-J's 64 of 256) touches only the rotated quarter of each head.
  const OpDesc partial = op("rope", {{"tokens", "8192"}, {"heads", "16"}, {"head_dim", "256"}, {"rotary_dim", "64"}});
  const OpDesc full = op("rope", {{"tokens", "8192"}, {"heads", "16"}, {"head_dim", "256"}});
  EXPECT_LT(hbm_bytes(predict(m, partial, "rope=fused")), 0.5 * hbm_bytes(predict(m, full, "rope=fused")));
}

TEST(SwiGlu, FusedReadsGateAndUpOnceAndWritesHalf) {
  const hw::Machine m = hw::Machine::load(config_path("h100_sxm5_80gb"));
  const OpDesc swiglu = op("swiglu", {{"elements", std::to_string(4096 * 14336)}});
  const Prediction fused = predict(m, swiglu, "swiglu=fused");
  const Prediction unfused = predict(m, swiglu, "swiglu=unfused");
  ASSERT_EQ(fused.kernels.size(), 1u);
  EXPECT_EQ(unfused.kernels.size(), 2u);  // silu(gate), then * up
  EXPECT_GT(unfused.time_s, 1.4 * fused.time_s);
  const double out_bytes = 4096.0 * 14336 * 2;
  EXPECT_NEAR(hbm_bytes(fused), 3 * out_bytes, 0.01 * out_bytes);
}

}  // namespace
}  // namespace syntorch::runtime
