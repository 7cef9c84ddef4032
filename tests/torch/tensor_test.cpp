// Tensor metadata, views, memory (RAII) and meta mode.

#include <gtest/gtest.h>

#include <thread>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace syntorch {
namespace {

namespace torch = syntorch::torch;
using runtime::OpKind;
using Sizes = std::vector<std::int64_t>;
using torch::testing::error_of;
using torch::testing::FakeRank;

class TorchTensor : public torch::testing::OnRank {};
class TorchView : public torch::testing::OnRank {};
class TorchMemory : public torch::testing::OnRank {};

TEST_F(TorchTensor, MetadataOfAFactoryTensor) {
  auto x = torch::empty({2, 3, 4}, torch::kFloat16);
  EXPECT_TRUE(x.defined());
  EXPECT_EQ(x.sizes(), (Sizes{2, 3, 4}));
  EXPECT_EQ(x.strides(), (Sizes{12, 4, 1}));
  EXPECT_EQ(x.dim(), 3);
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_EQ(x.size(0), 2);
  EXPECT_EQ(x.scalar_type(), torch::kFloat16);
  EXPECT_EQ(x.dtype(), torch::kHalf);
  EXPECT_EQ(x.runtime_dtype(), DType::fp16);
  EXPECT_EQ(x.element_size(), 2.0);
  EXPECT_EQ(x.nbytes(), 48u);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(x.is_cuda());
  EXPECT_FALSE(torch::Tensor().defined());
}

TEST_F(TorchTensor, AWatchedTensorIsReportedOnceWhenItsLastHandleGoes) {
  (void)torch::take_released_watched();  // whatever earlier tests left
  std::uint64_t id = 0;
  std::uint64_t unwatched = 0;
  {
    auto x = torch::empty({4});
    auto y = torch::empty({4});
    x.watch_release();
    id = x.unique_id();
    unwatched = y.unique_id();
    auto view = x.view({2, 2});  // holds x's memory, not x's handle
    auto copy = x;               // another handle of x
    x = torch::Tensor();
    EXPECT_TRUE(torch::take_released_watched().empty());  // `copy` still holds it
  }
  const auto released = torch::take_released_watched();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0], id);
  EXPECT_NE(released[0], unwatched);
  EXPECT_TRUE(torch::take_released_watched().empty());  // taken once
  // A reused implementation starts unwatched: the watched one released last is the next reused.
  const torch::detail::TensorImpl* watched_impl = nullptr;
  {
    auto w = torch::empty({4});
    w.watch_release();
    watched_impl = w.unsafe_get_impl();
  }
  EXPECT_EQ(torch::take_released_watched().size(), 1u);
  {
    auto z = torch::empty({4});
    EXPECT_EQ(z.unsafe_get_impl(), watched_impl);  // the same implementation, reused
  }
  EXPECT_TRUE(torch::take_released_watched().empty());
  EXPECT_THROW(torch::Tensor().watch_release(), torch::Error);
}

TEST_F(TorchTensor, DimOutOfRangeIsAnError) {
  auto x = torch::empty({2, 3});
  EXPECT_NE(error_of([&] { (void)x.size(2); }).find("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
            std::string::npos);
}

TEST_F(TorchTensor, ScalarTypesMapToRuntimeDTypes) {
  EXPECT_EQ(torch::to_runtime_dtype(torch::kBFloat16), DType::bf16);
  EXPECT_EQ(torch::to_runtime_dtype(torch::kFloat8), DType::fp8);
  EXPECT_EQ(torch::to_runtime_dtype(torch::kFloat32), DType::fp32);
  EXPECT_EQ(torch::to_runtime_dtype(torch::kInt64), DType::fp64);  // same width
  EXPECT_EQ(torch::empty({3}, torch::kFloat4).element_size(), 0.5);
  EXPECT_EQ(torch::empty({3}, torch::kFloat4).nbytes(), 2u);  // rounded up
  EXPECT_EQ(torch::empty({3}, torch::kInt64).nbytes(), 24u);
}

TEST_F(TorchTensor, DefaultDtypeIsFloat32AndSettable) {
  EXPECT_EQ(torch::empty({1}).dtype(), torch::kFloat32);
  {
    torch::DefaultDtypeGuard half(torch::kFloat16);
    EXPECT_EQ(torch::empty({1}).dtype(), torch::kFloat16);
    EXPECT_EQ(torch::empty({1}, torch::TensorOptions().dtype(torch::kBFloat16)).dtype(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::get_default_dtype(), torch::kFloat32);
}

TEST_F(TorchTensor, DefaultDtypeIsPerThreadAsEachRankIsAProcess) {
  torch::DefaultDtypeGuard half(torch::kFloat16);
  torch::ScalarType seen = torch::kFloat16;
  std::thread other([&] { seen = torch::get_default_dtype(); });
  other.join();
  EXPECT_EQ(seen, torch::kFloat32);
  EXPECT_EQ(torch::get_default_dtype(), torch::kFloat16);
}

// --- Views ---

TEST_F(TorchView, ViewInfersMinusOne) {
  auto x = torch::empty({2, 3, 4});
  EXPECT_EQ(x.view({-1, 4}).sizes(), (Sizes{6, 4}));
  EXPECT_EQ(x.view(-1).sizes(), (Sizes{24}));
  EXPECT_EQ(x.reshape({4, -1}).sizes(), (Sizes{4, 6}));
  EXPECT_EQ(x.flatten(1).sizes(), (Sizes{2, 12}));
  EXPECT_EQ(x.flatten().sizes(), (Sizes{24}));
}

TEST_F(TorchView, ViewWithTheWrongElementCountNamesShapeAndSize) {
  auto x = torch::empty({2, 3, 4});
  EXPECT_EQ(error_of([&] { x.view({5, 7}); }), "view: shape '[5, 7]' is invalid for input of size 24");
  EXPECT_NE(error_of([&] { x.view({-1, -1}); }).find("only one dimension can be inferred"), std::string::npos);
  EXPECT_NE(error_of([&] { x.reshape({5, -1}); }).find("shape '[5, -1]' is invalid for input of size 24"),
            std::string::npos);
}

TEST_F(TorchView, ViewsShareMemoryAndAreHostOpsOnly) {
  auto x = torch::empty({4, 8});
  const int allocations = rank.allocations;
  auto v = x.view({8, 4});
  auto t = x.transpose(0, 1);
  auto p = x.unsqueeze(0).permute({1, 0, 2});
  EXPECT_EQ(rank.allocations, allocations);
  EXPECT_TRUE(rank.launches.empty());
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_TRUE(t.is_alias_of(v));
  EXPECT_TRUE(rank.has_host_op("aten::view"));
  EXPECT_TRUE(rank.has_host_op("aten::transpose"));
  EXPECT_TRUE(rank.has_host_op("aten::permute"));
  EXPECT_TRUE(rank.has_host_op("aten::unsqueeze"));
}

TEST_F(TorchView, TransposeSwapsStridesAndIsNotContiguous) {
  auto x = torch::empty({4, 8});
  auto t = x.transpose(0, 1);
  EXPECT_EQ(t.sizes(), (Sizes{8, 4}));
  EXPECT_EQ(t.strides(), (Sizes{1, 8}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(x.t().sizes(), (Sizes{8, 4}));
  auto p = torch::empty({2, 3, 4, 5}).permute({0, 2, 1, 3});
  EXPECT_EQ(p.sizes(), (Sizes{2, 4, 3, 5}));
  EXPECT_EQ(p.strides(), (Sizes{60, 5, 20, 1}));
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_NE(error_of([&] { x.permute({0, 0}); }).find("duplicate dims"), std::string::npos);
}

TEST_F(TorchView, ViewOfATransposedTensorIsAnErrorAndReshapeCopies) {
  auto t = torch::empty({4, 8}, torch::kFloat16).transpose(0, 1);
  EXPECT_NE(error_of([&] { t.view({32}); }).find("Use .reshape(...) instead"), std::string::npos);
  const auto live = rank.live_bytes;
  auto r = t.reshape({32});
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_FALSE(r.is_alias_of(t));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, 32u);
  EXPECT_EQ(rank.live_bytes, live + 64);
}

TEST_F(TorchView, ViewOfANonContiguousTensorWorksWhereStridesAllow) {
  // [2, 3, 4] -> [3, 2, 4]: the last dim is still contiguous, so it can be split.
  auto t = torch::empty({2, 3, 4}).transpose(0, 1);
  auto v = t.view({3, 2, 2, 2});
  EXPECT_EQ(v.strides(), (Sizes{4, 12, 2, 1}));
  EXPECT_TRUE(v.is_alias_of(t));
  EXPECT_TRUE(rank.launches.empty());
}

TEST_F(TorchView, TransposeThenContiguousLaunchesOneCopy) {
  auto x = torch::empty({2, 16, 8, 64}, torch::kFloat16);
  auto same = x.contiguous();
  EXPECT_TRUE(same.is_same(x));
  EXPECT_TRUE(rank.launches.empty());
  auto c = x.transpose(1, 2).contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.sizes(), (Sizes{2, 8, 16, 64}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, 2u * 16 * 8 * 64);
  EXPECT_EQ(rank.last().dtype, DType::fp16);
  EXPECT_EQ(rank.launches.back().name, "aten::contiguous");
}

TEST_F(TorchView, SliceNarrowAndSelectOffsetIntoTheSameMemory) {
  auto x = torch::empty({4, 10});
  auto s = x.slice(1, 2, 8, 2);
  EXPECT_EQ(s.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(s.strides(), (Sizes{10, 2}));
  EXPECT_EQ(s.storage_offset(), 2);
  auto n = x.narrow(1, -3, 3);
  EXPECT_EQ(n.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(n.storage_offset(), 7);
  EXPECT_FALSE(n.is_contiguous());
  auto row = x[1];
  EXPECT_EQ(row.sizes(), (Sizes{10}));
  EXPECT_EQ(row.storage_offset(), 10);
  EXPECT_TRUE(row.is_contiguous());
  EXPECT_EQ(x.select(1, -1).sizes(), (Sizes{4}));
  EXPECT_EQ(x.slice(0, -2).sizes(), (Sizes{2, 10}));
  EXPECT_EQ(error_of([&] { x.narrow(1, 8, 3); }), "narrow: start (8) + length (3) exceeds dimension size (10).");
  EXPECT_NE(error_of([&] { x.select(0, 4); }).find("index 4 out of range for tensor of size [4, 10] at dimension 0"),
            std::string::npos);
  EXPECT_TRUE(rank.launches.empty());
}

TEST_F(TorchView, UnsqueezeSqueezeExpand) {
  auto x = torch::empty({3, 4});
  EXPECT_EQ(x.unsqueeze(0).sizes(), (Sizes{1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).sizes(), (Sizes{3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(1).squeeze(1).sizes(), (Sizes{3, 4}));
  EXPECT_EQ(torch::empty({1, 3, 1}).squeeze().sizes(), (Sizes{3}));
  EXPECT_EQ(x.squeeze(0).sizes(), (Sizes{3, 4}));  // not size 1: unchanged
  auto e = x.unsqueeze(1).expand({3, 5, 4});
  EXPECT_EQ(e.sizes(), (Sizes{3, 5, 4}));
  EXPECT_EQ(e.strides(), (Sizes{4, 0, 1}));
  EXPECT_EQ(x.expand({2, -1, -1}).sizes(), (Sizes{2, 3, 4}));
  EXPECT_NE(error_of([&] { x.expand({3, 5}); }).find("must match the existing size (4) at non-singleton dimension 1"),
            std::string::npos);
  // An expanded tensor made contiguous copies its full element count.
  auto c = e.contiguous();
  EXPECT_EQ(rank.last().elements, 60u);
}

TEST_F(TorchView, SplitAndChunkAreViews) {
  auto qkv = torch::empty({2, 5, 3 * 64});
  auto parts = qkv.split(64, -1);
  ASSERT_EQ(parts.size(), 3u);
  for (const auto& p : parts) {
    EXPECT_EQ(p.sizes(), (Sizes{2, 5, 64}));
    EXPECT_TRUE(p.is_alias_of(qkv));
  }
  EXPECT_EQ(parts[2].storage_offset(), 128);
  auto chunks = torch::empty({10}).chunk(3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].size(0), 4);
  EXPECT_EQ(chunks[2].size(0), 2);
  EXPECT_TRUE(rank.launches.empty());
}

// --- Memory ---

TEST_F(TorchMemory, AFactoryAllocatesNumelTimesElementSize) {
  auto x = torch::empty({2, 3}, torch::kFloat16);
  EXPECT_EQ(rank.allocations, 1);
  EXPECT_EQ(rank.live_bytes, 12u);
  EXPECT_EQ(x.storage_nbytes(), 12u);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::activations), 12u);
  EXPECT_TRUE(rank.launches.empty());  // empty launches nothing
  EXPECT_TRUE(rank.has_host_op("aten::empty"));
}

TEST_F(TorchMemory, MemoryIsFreedWhenTheLastReferenceDies) {
  {
    auto x = torch::empty({1024});
    auto y = x;  // NOLINT: a second handle
    x = torch::Tensor();
    EXPECT_EQ(rank.live_bytes, 4096u);
  }
  EXPECT_EQ(rank.live_bytes, 0u);
  EXPECT_EQ(rank.frees, 1);
  EXPECT_EQ(rank.bad_frees, 0);
}

TEST_F(TorchMemory, AViewKeepsItsBaseAlive) {
  torch::Tensor v;
  {
    auto x = torch::empty({1024});
    v = x.transpose(0, 0).view({32, 32}).slice(0, 0, 4);
  }
  EXPECT_EQ(rank.allocations, 1);
  EXPECT_EQ(rank.live_bytes, 4096u);
  v = torch::Tensor();
  EXPECT_EQ(rank.live_bytes, 0u);
  EXPECT_EQ(rank.frees, 1);
}

TEST_F(TorchMemory, PeakIsRightAcrossAChainOfOps) {
  auto x = torch::empty({1024});               // 4 KiB
  auto y = torch::gelu(torch::gelu(x) * 2.0);  // temporaries die at the end of the statement
  EXPECT_EQ(rank.peak_bytes, 4u * 4096);       // x, gelu, mul live together, then y
  EXPECT_EQ(rank.live_bytes, 2u * 4096);       // x and y
  x = torch::gelu(x);                          // the old x dies after its replacement is made
  EXPECT_EQ(rank.live_bytes, 2u * 4096);
  EXPECT_EQ(rank.peak_bytes, 4u * 4096);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::gelu, OpKind::mul, OpKind::gelu, OpKind::gelu}));
}

TEST_F(TorchMemory, ZeroByteTensorsDoNotAllocate) {
  auto x = torch::zeros({0, 16});
  EXPECT_EQ(rank.allocations, 0);
  EXPECT_EQ(x.numel(), 0);
  auto y = x + x;
  EXPECT_EQ(rank.allocations, 0);
  EXPECT_TRUE(rank.launches.empty());  // nothing to compute: dispatch only
  EXPECT_TRUE(rank.has_host_op("aten::add"));
}

TEST_F(TorchMemory, MemoryUseGuardTagsAllocations) {
  torch::Tensor cache;
  {
    torch::MemoryUseGuard g(torch::MemoryUse::kv_cache);
    cache = torch::zeros({2, 8, 128, 64}, torch::kFloat16);
  }
  auto a = torch::empty({10}, torch::kFloat16);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::kv_cache), 2u * 8 * 128 * 64 * 2);
  EXPECT_EQ(rank.bytes_for(os::MemoryUse::activations), 20u);
}

TEST_F(TorchMemory, FillingFactoriesLaunchACopyOfNumelElements) {
  auto z = torch::zeros({4, 4}, torch::kBFloat16);
  auto o = torch::ones({4});
  auto r = torch::randn({8});
  auto a = torch::arange(5);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::copy, OpKind::copy, OpKind::copy, OpKind::copy}));
  EXPECT_EQ(rank.launches[0].op.elements, 16u);
  EXPECT_EQ(rank.launches[0].op.dtype, DType::bf16);
  EXPECT_EQ(rank.launches[0].name, "aten::zeros");
  EXPECT_EQ(a.dtype(), torch::kInt64);
  EXPECT_EQ(a.sizes(), (Sizes{5}));
}

TEST_F(TorchMemory, TokenIdsAreALongTensorCopiedToTheDevice) {
  auto ids = torch::tensor({1, 2, 3});
  EXPECT_EQ(ids.dtype(), torch::kInt64);
  EXPECT_EQ(ids.sizes(), (Sizes{3}));
  EXPECT_EQ(rank.live_bytes, 24u);
  ASSERT_EQ(rank.h2d.size(), 1u);
  EXPECT_EQ(rank.h2d[0].first, 24u);
}

TEST_F(TorchMemory, OutOfMemoryPropagatesAndLeaksNothing) {
  FakeRank small(1000);
  runtime::RankGuard g(&small);
  auto a = torch::empty({200});  // 800 bytes
  EXPECT_THROW(torch::gelu(a), runtime::OutOfMemory);
  EXPECT_EQ(small.live_bytes, 800u);
  EXPECT_TRUE(small.launches.empty());
  a = torch::Tensor();
  EXPECT_EQ(small.live_bytes, 0u);
}

TEST_F(TorchMemory, ItemAndCpuSynchronise) {
  auto logits = torch::empty({1, 50257}, torch::kFloat16);
  auto next = logits.argmax(-1);
  EXPECT_EQ(next.item<std::int64_t>(), 0);  // values are not simulated
  ASSERT_EQ(rank.d2h.size(), 1u);
  EXPECT_EQ(rank.d2h[0].first, 8u);
  EXPECT_EQ(rank.syncs, (std::vector<std::string>{"aten::item"}));
  auto host = logits.cpu();
  EXPECT_TRUE(host.is_cpu());
  EXPECT_EQ(rank.d2h.back().first, 2u * 50257);
  EXPECT_EQ(rank.syncs.size(), 2u);
  auto back = host.to(torch::kCUDA);
  EXPECT_EQ(rank.h2d.back().first, 2u * 50257);
  EXPECT_NE(error_of([&] { logits.item(); }).find("a Tensor with 50257 elements cannot be converted to Scalar"),
            std::string::npos);
}

TEST_F(TorchMemory, CpuTensorsAllocateNoDeviceMemory) {
  auto h = torch::empty({1024}, torch::TensorOptions().device(torch::kCPU));
  auto y = h * 2.0;
  EXPECT_EQ(rank.allocations, 0);
  EXPECT_TRUE(rank.launches.empty());
  EXPECT_TRUE(rank.has_host_op("aten::mul"));
  auto d = torch::empty({1024});
  EXPECT_NE(error_of([&] { (void)(h + d); }).find("Expected all tensors to be on the same device"), std::string::npos);
}

TEST_F(TorchMemory, ATensorOutlivingItsRankIsNotFreedAgainstIt) {
  torch::Tensor survivor;
  {
    FakeRank other;
    {
      runtime::RankGuard g(&other);
      survivor = torch::empty({16});
    }
    survivor = torch::Tensor();  // `other` is no longer current: nothing to give back to it
    EXPECT_EQ(other.frees, 0);
  }
  EXPECT_EQ(rank.frees, 0);
  EXPECT_EQ(rank.bad_frees, 0);
}

TEST(TorchMeta, WithoutARankTensorsAreShapesOnly) {
  ASSERT_EQ(runtime::current_rank(), nullptr);
  auto x = torch::randn({2, 8, 64}, torch::kFloat16);
  auto w = torch::empty({128, 64}, torch::kFloat16);
  auto y = torch::nn::functional::linear(x, w);
  auto z = torch::softmax(y.view({2, 8, 2, 64}).transpose(1, 2).contiguous(), -1);
  EXPECT_EQ(z.sizes(), (Sizes{2, 2, 8, 64}));
  EXPECT_EQ(x.storage_nbytes(), 0u);
  EXPECT_EQ(z.storage_nbytes(), 0u);
  EXPECT_EQ(z.nbytes(), 2u * 2 * 8 * 64 * 2);
  EXPECT_EQ(torch::argmax(z).item<std::int64_t>(), 0);
  torch::nn::Linear lin(torch::nn::LinearOptions(64, 32).dtype(torch::kFloat16));
  EXPECT_EQ(lin(x).sizes(), (Sizes{2, 8, 32}));
  torch::cuda::synchronize();
  EXPECT_FALSE(torch::cuda::is_available());
}

}  // namespace
}  // namespace syntorch
