// The module tree, the holder pattern, and the common layers' parameters and forwards.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace syntorch {
namespace {

namespace torch = syntorch::torch;
namespace nn = torch::nn;
using runtime::OpKind;
using Sizes = std::vector<std::int64_t>;
using torch::testing::error_of;

class TorchModule : public torch::testing::OnRank {};

// A GPT-style block written as a user would write it against libtorch.
struct BlockImpl : nn::Module {
  BlockImpl(std::int64_t hidden, std::int64_t layers) : nn::Module("Block") {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    fc = register_module("fc", nn::Linear(nn::LinearOptions(hidden, 4 * hidden).bias(false)));
    for (std::int64_t i = 0; i < layers; ++i) h->push_back(nn::Linear(hidden, hidden));
    register_module("h", h);
    drop = register_module("drop", nn::Dropout(0.1));
    register_buffer("mask", torch::empty({hidden}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = drop(fc(ln(x)));
    return y;
  }
  nn::LayerNorm ln{nullptr};
  nn::Linear fc{nullptr};
  nn::ModuleList h;
  nn::Dropout drop{nullptr};
};
TORCH_MODULE(Block);

TEST_F(TorchModule, ParametersAreNamedRecursivelyWithDots) {
  Block block(16, 2);
  std::vector<std::string> names;
  for (const auto& [name, p] : block->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"ln.weight", "ln.bias", "fc.weight", "h.0.weight", "h.0.bias",
                                             "h.1.weight", "h.1.bias"}));
  EXPECT_EQ(block->parameters().size(), 7u);
  EXPECT_EQ(block->parameters(false).size(), 0u);
  EXPECT_EQ(block->named_parameters()["fc.weight"].sizes(), (Sizes{64, 16}));
  EXPECT_EQ(block->named_buffers().keys(), (std::vector<std::string>{"mask"}));
  EXPECT_EQ(block->children().size(), 4u);
  EXPECT_TRUE(block->named_modules().contains("h.1"));
  EXPECT_EQ(block->h->size(), 2u);
  EXPECT_EQ(block->h->ptr<nn::LinearImpl>(1)->weight.sizes(), (Sizes{16, 16}));
  EXPECT_EQ(block->name(), "Block");
  EXPECT_EQ(block->fc->name(), "Linear");
  for (const auto& item : block->named_parameters()) EXPECT_TRUE(item.value().defined()) << item.key();
}

TEST_F(TorchModule, ParametersAreAllocatedAsWeights) {
  Block block(16, 2);
  std::uint64_t bytes = 0;
  for (const auto& p : block->parameters()) bytes += p.nbytes();
  EXPECT_EQ(bytes, 4u * (16 + 16 + 64 * 16 + 2 * (16 * 16 + 16)));
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::weights), bytes);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::activations), 64u);  // the buffer
  EXPECT_TRUE(rank.launches.empty());  // parameters are allocated, not initialised
}

TEST_F(TorchModule, AnFp16LinearHoldsItsWeightAndBias) {
  nn::Linear linear(nn::LinearOptions(4096, 16384).dtype(torch::kFloat16));
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::weights), 2u * 4096 * 16384 + 2u * 16384);
  EXPECT_EQ(linear->weight.sizes(), (Sizes{16384, 4096}));
  EXPECT_EQ(linear->weight.dtype(), torch::kFloat16);
  EXPECT_EQ(linear->bias.sizes(), (Sizes{16384}));
}

TEST_F(TorchModule, ParametersTakeTheDefaultDtype) {
  torch::DefaultDtypeGuard bf16(torch::kBFloat16);
  nn::Linear linear(8, 4);
  nn::Embedding table(100, 8);
  EXPECT_EQ(linear->weight.dtype(), torch::kBFloat16);
  EXPECT_EQ(table->weight.dtype(), torch::kBFloat16);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::weights), 2u * (8 * 4 + 4 + 100 * 8));
}

TEST_F(TorchModule, ParametersAreFreedWithTheirModule) {
  {
    nn::Linear linear(64, 64);
    EXPECT_GT(rank.live_bytes, 0u);
  }
  EXPECT_EQ(rank.live_bytes, 0u);
  EXPECT_EQ(rank.bad_frees, 0);
}

TEST_F(TorchModule, HolderCallsForward) {
  nn::Linear linear(nn::LinearOptions(32, 8).dtype(torch::kFloat16));
  auto x = torch::empty({3, 32}, torch::kFloat16);
  EXPECT_EQ(linear(x).sizes(), (Sizes{3, 8}));
  EXPECT_EQ(linear->forward(x).sizes(), (Sizes{3, 8}));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::gemm, OpKind::gemm}));
  nn::Linear shared = linear;  // copies share the module
  EXPECT_EQ(shared.get(), linear.get());
  nn::Linear none{nullptr};
  EXPECT_TRUE(none.is_empty());
  EXPECT_NE(error_of([&] { none->forward(x); }).find("empty ModuleHolder"), std::string::npos);
}

TEST_F(TorchModule, EvalReachesChildrenAndDropoutThenLaunchesNothing) {
  Block block(16, 1);
  auto x = torch::empty({2, 16});
  EXPECT_TRUE(block->drop->is_training());
  rank.launches.clear();
  (void)block(x);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::layernorm, OpKind::gemm, OpKind::dropout}));
  block->eval();
  EXPECT_FALSE(block->is_training());
  EXPECT_FALSE(block->drop->is_training());
  rank.launches.clear();
  (void)block(x);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::layernorm, OpKind::gemm}));
}

TEST_F(TorchModule, LayersForward) {
  torch::DefaultDtypeGuard half(torch::kFloat16);
  nn::Embedding wte(nn::EmbeddingOptions(1000, 64));
  nn::LayerNorm ln(nn::LayerNormOptions({64}).eps(1e-5));
  nn::RMSNorm rms(nn::RMSNormOptions({64}));
  nn::GELU gelu(nn::GELUOptions().approximate("tanh"));
  nn::SiLU silu;
  auto ids = torch::tensor({1, 2, 3, 4});
  auto h = wte(ids.view({2, 2}));
  EXPECT_EQ(h.sizes(), (Sizes{2, 2, 64}));
  h = gelu(rms(ln(h)));
  h = silu(h);
  EXPECT_EQ(h.sizes(), (Sizes{2, 2, 64}));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::embedding, OpKind::layernorm, OpKind::rmsnorm, OpKind::gelu,
                                                OpKind::silu}));
  EXPECT_EQ(rms->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  nn::LayerNorm plain(nn::LayerNormOptions({64}).elementwise_affine(false));
  EXPECT_TRUE(plain->parameters().empty());
}

TEST_F(TorchModule, DuplicateAndDottedNamesAreErrors) {
  nn::Module m;
  m.register_parameter("w", torch::empty({1}));
  EXPECT_NE(error_of([&] { m.register_parameter("w", torch::empty({1})); }).find("Parameter 'w' already defined"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_parameter("a.b", torch::empty({1})); }).find("must not contain a dot"),
            std::string::npos);
  m.register_module("lin", nn::Linear(2, 2));
  EXPECT_NE(error_of([&] { m.register_module("lin", nn::Linear(2, 2)); }).find("already defined"), std::string::npos);
}

}  // namespace
}  // namespace syntorch
