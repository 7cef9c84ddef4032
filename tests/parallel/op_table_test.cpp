// The op table is the one place an op kind is declared: every kind must also be reachable from
// the torch or parallel API, take its parameters from rows and flags, name its implementations
// for policies, and lower (or plan, for communication) on a real device. A kind added to the
// table and forgotten in any of these fails here.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "../torch/fake_rank.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/predictor.hpp"
#include "syntorch/torch/compile.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/fused.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/optim.hpp"

namespace {

using namespace syntorch;
using runtime::OpKind;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

std::vector<OpKind> all_kinds() {
  std::vector<OpKind> kinds;
  for (std::size_t i = 0; i < runtime::kOpKinds; ++i) kinds.push_back(static_cast<OpKind>(i));
  return kinds;
}

// A FakeRank that also records the kinds of sends and receives.
class RecordingRank : public torch::testing::FakeRank {
 public:
  void send(int, std::uint64_t, std::string_view) override { p2p = true; }
  void recv(int, std::uint64_t, std::string_view) override { p2p = true; }
  bool p2p = false;
};

TEST(OpTable, EveryKindHasOneEntryUnderItsOwnName) {
  std::set<std::string> names;
  for (OpKind k : all_kinds()) {
    const std::string name(runtime::op_name(k));
    EXPECT_TRUE(names.insert(name).second) << name << " is named twice";
    ASSERT_TRUE(runtime::parse_op(name).has_value()) << name;
    EXPECT_EQ(*runtime::parse_op(name), k) << name;
    const auto impls = runtime::KernelPolicy::implementations(k);
    ASSERT_FALSE(impls.empty()) << name;
    EXPECT_EQ(impls.front(), "auto") << name;
    const auto keys = runtime::op_param_keys(k);
    EXPECT_FALSE(keys.empty()) << name << " has no parameters";
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size()) << name;
  }
  EXPECT_EQ(runtime::op_names().size(), runtime::kOpKinds);
}

// Parameters that make a small valid op of any kind (each op reads the ones it declares).
runtime::OpDesc small_op(OpKind k) {
  static const std::map<std::string, std::string> kValues{
      {"m", "256"},      {"n", "512"},     {"k", "128"},        {"batch", "2"},   {"heads", "8"},
      {"kv_heads", "2"}, {"seq_q", "128"}, {"seq_kv", "128"},   {"head_dim", "64"}, {"causal", "true"},
      {"dropout", "true"},
      {"rows", "64"},    {"cols", "1024"}, {"elements", "4096"}, {"tokens", "64"}, {"hidden", "1024"},
      {"vocab", "5000"}, {"ranks", "8"},   {"bytes", "1 MiB"}, {"rotary_dim", "32"}, {"top_k", "2"},
      {"groups", "8"},   {"tensors", "4"}, {"momentum", "1"}, {"inputs", "2"}, {"page_tokens", "16"},
      {"window", "9"},   {"stride", "1"},  {"channels_last", "true"}, {"duration_ps", "20000000"},
      {"written_bytes", "16384"}, {"ops", "8192"}};
  std::map<std::string, std::string> params;
  for (const std::string& key : runtime::op_param_keys(k)) {
    EXPECT_TRUE(kValues.count(key)) << runtime::op_name(k) << " has a parameter this test does not know: " << key;
    if (kValues.count(key)) params[key] = kValues.at(key);
  }
  runtime::OpDesc op;
  op.kind = k;
  Diagnostics d;
  EXPECT_TRUE(runtime::op_from_params(params, {}, op, d, "test")) << d.to_string();
  return op;
}

TEST(OpTable, EveryKindLowersOnADeviceAndItsKernelsDoItsFlops) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  runtime::Predictor predictor(m, {});
  for (OpKind k : all_kinds()) {
    const runtime::OpDesc op = small_op(k);
    const runtime::Prediction p = predictor.predict(op);
    EXPECT_GT(p.time_s, 0) << op.describe();
    EXPECT_GT(runtime::op_min_bytes(op), 0) << op.describe();
    if (runtime::is_collective(k)) {
      ASSERT_TRUE(p.plan.has_value()) << op.describe();
      continue;
    }
    ASSERT_FALSE(p.kernels.empty()) << op.describe();
    double flops = 0;
    for (const auto& kernel : p.kernels) {
      flops += kernel.flops;
      EXPECT_EQ(kernel.op, k) << kernel.name;
    }
    EXPECT_DOUBLE_EQ(flops, runtime::op_flops(op)) << op.describe();
  }
}

TEST(OpTable, EveryCommunicationImplementationHasAnAlgorithm) {
  // Each implementation runs on one of these (a switched node, a full mesh, two nodes, over all
  // their devices); elsewhere it may decline, naming what it needs.
  const std::vector<hw::Machine> machines{hw::Machine::load(config("dgx_h100.json")),
                                          hw::Machine::load(config("mi300x_x8.json")),
                                          hw::Machine::load(config("dgx_h100_x2.json"))};
  for (OpKind k : all_kinds()) {
    if (!runtime::is_collective(k)) continue;
    for (const std::string& impl : runtime::KernelPolicy::implementations(k)) {
      if (impl == "auto") continue;
      int ran = 0;
      for (const hw::Machine& m : machines) {
        runtime::OpDesc op = small_op(k);
        op.ranks = k == OpKind::sendrecv ? 2 : m.devices().size();
        Diagnostics d;
        runtime::Predictor predictor(m, runtime::KernelPolicy::parse(std::string(runtime::op_name(k)) + "=" + impl, d));
        ASSERT_TRUE(d.empty()) << d.to_string();
        try {
          const runtime::Prediction p = predictor.predict(op);
          ASSERT_TRUE(p.plan.has_value());
          EXPECT_EQ(p.plan->algorithm, impl) << op.describe();
          ++ran;
        } catch (const InputError& e) {
          EXPECT_NE(e.diagnostics().to_string().find(" needs "), std::string::npos) << e.diagnostics().to_string();
        }
      }
      EXPECT_GT(ran, 0) << runtime::op_name(k) << "=" << impl << " runs on no bundled machine";
    }
  }
}

TEST(OpTable, EveryKindHasAFunctionInTheTorchOrParallelApi) {
  RecordingRank rank;
  runtime::RankGuard guard(&rank);
  namespace F = torch::nn::functional;
  auto x = torch::empty({4, 64});
  auto w = torch::empty({64, 32});
  (void)torch::matmul(x, w);
  (void)torch::bmm(torch::empty({4, 3, 64}), torch::empty({4, 64, 8}));
  auto q = torch::empty({1, 8, 16, 64});
  (void)torch::scaled_dot_product_attention(q, q, q, {}, 0.0, true);
  (void)torch::layer_norm(x, {64});
  (void)torch::rms_norm(x, {64});
  (void)torch::softmax(x, -1);
  (void)F::gelu(x);
  (void)F::silu(x);
  (void)F::relu(x);
  (void)torch::tanh(x);
  (void)torch::sigmoid(x);
  (void)torch::exp(x);
  (void)torch::log(x);
  (void)torch::sqrt(x);
  (void)torch::rsqrt(x);
  (void)torch::pow(x, 2.0);
  (void)torch::sin(x);
  (void)torch::cos(x);
  (void)torch::abs(x);
  (void)torch::polar(x, x);
  (void)(-x);
  (void)torch::dropout(x, 0.1, true);
  (void)(x + x);
  (void)(x - x);
  (void)(x * x);
  (void)(x / x);
  (void)torch::embedding(torch::empty({100, 64}), torch::empty({4}, torch::kInt64));
  (void)x.clone();
  (void)torch::fused::silu_and_mul(x);
  (void)torch::fused::paged_attention(torch::empty({6, 8, 64}), torch::empty({4, 16, 2, 64}), torch::empty({4, 16, 2, 64}),
                                      {1, 5}, {20, 5});
  auto rq = torch::empty({4, 8, 64});
  auto rk = torch::empty({4, 2, 64});
  torch::fused::rotary_embedding_(rq, rk, 32);
  const parallel::ProcessGroup group{{}, {0, 1}, 0};
  parallel::all_reduce(x, group);
  parallel::broadcast(x, group, 0);
  parallel::reduce(x, group, 1);
  (void)parallel::all_gather(x, group);
  (void)parallel::reduce_scatter(x, group);
  parallel::send(x, 1);
  (void)parallel::all_to_all(x, {2, 2}, {1, 3}, group);
  torch::cuda::replay_kernel(20e-6, 4096, 1 << 20, "recorded");  // a replayed trace's kernel
  auto [routing, experts] = torch::fused::topk_softmax(torch::empty({4, 8}), 2);
  (void)torch::topk(x, 3);
  auto routed = torch::fused::moe_permute(x, experts);
  auto expert_out = torch::fused::grouped_mm(routed, torch::empty({2, 32, 64}), {5, 3});
  (void)torch::fused::moe_unpermute(torch::empty({8, 64}), routing);
  (void)expert_out;
  // Reductions, scans, sorts, indexed ops and the other elementwise kinds.
  (void)torch::amax(x, {1});
  (void)torch::all(x);
  (void)torch::norm(x, 2.0, {1});
  (void)torch::cumsum(x, 1);
  (void)torch::sort(x, 1);
  auto index = torch::empty({4, 8}, torch::kInt64);
  (void)torch::gather(x, 1, index);
  (void)torch::scatter(x, 1, index, torch::empty({4, 8}));
  (void)torch::maximum(x, x);
  (void)torch::sign(x);
  (void)torch::round(x);
  {
    auto leaf = torch::empty({4, 64}).requires_grad_();
    torch::sum(torch::leaky_relu(leaf, 0.1)).backward();
  }
  {
    // The backward kinds through autograd, the optimizer kinds through torch::optim.
    auto w = torch::empty({64, 64}).requires_grad_();
    auto table = torch::empty({100, 64}).requires_grad_();
    auto norm_w = torch::empty({64}).requires_grad_();
    auto h = torch::embedding(table, torch::empty({4}, torch::kInt64));
    h = torch::layer_norm(h, {64}, norm_w) + torch::rms_norm(h, {64}, norm_w);
    h = F::gelu(h) + F::silu(h) + F::relu(h) + torch::tanh(h) + torch::sigmoid(h);
    h = torch::fused::silu_and_mul(torch::matmul(h, w));
    auto qkv = h.reshape({1, 2, 4, 16});
    h = torch::scaled_dot_product_attention(qkv, qkv, qkv, {}, 0.0, true).reshape({4, 32});
    auto loss = F::cross_entropy(h, torch::empty({4}, torch::kInt64));
    loss.backward();
    torch::optim::AdamW({w}, torch::optim::AdamOptions().fused(true)).step();
    torch::optim::SGD({table}, torch::optim::SGDOptions(0.1).momentum(0.9).fused(true)).step();
    torch::optim::Adam adam({norm_w});
    adam.step();
    // Convolutions and batch norm, forward and backward.
    auto image = torch::empty({2, 3, 16, 16}).requires_grad_();
    auto filter = torch::empty({8, 3, 3, 3}).requires_grad_();
    auto bn_w = torch::empty({8}).requires_grad_();
    auto y = torch::batch_norm(F::conv2d(image, filter, {}, {1}, {1}), bn_w, {}, {}, {}, true);
    torch::sum(y).backward();
  }
  {
    // A compiled region's generated kernels (torch.compile).
    torch::compile::RegionOptions o;
    o.graph_id = 1;
    torch::compile::begin_region(o);
    (void)(torch::relu(x) * 2.0);
    (void)torch::compile::end_region();
  }
  std::set<OpKind> reached;
  for (const auto& l : rank.launches) reached.insert(l.op.kind);
  if (rank.p2p) reached.insert(OpKind::sendrecv);
  for (OpKind k : all_kinds()) {
    EXPECT_TRUE(reached.count(k)) << runtime::op_name(k) << " is in the op table but no torch or parallel function "
                                                             "launches it";
  }
}

}  // namespace
