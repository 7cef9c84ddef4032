// Each op's output shape, the runtime op it lowers to, and its shape errors.

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace syntorch {
namespace {

namespace torch = syntorch::torch;
namespace F = torch::nn::functional;
using runtime::OpKind;
using Sizes = std::vector<std::int64_t>;
using torch::testing::error_of;

class TorchMatmul : public torch::testing::OnRank {};
class TorchPointwise : public torch::testing::OnRank {};
class TorchRowwise : public torch::testing::OnRank {};
class TorchAttention : public torch::testing::OnRank {};
class TorchSelect : public torch::testing::OnRank {};
class TorchOps : public torch::testing::OnRank {};

// --- matmul ---

TEST_F(TorchMatmul, TwoDTimesTwoDIsOneGemm) {
  auto a = torch::empty({64, 128}, torch::kFloat16);
  auto b = torch::empty({128, 256}, torch::kFloat16);
  auto c = torch::matmul(a, b);
  EXPECT_EQ(c.sizes(), (Sizes{64, 256}));
  EXPECT_EQ(c.dtype(), torch::kFloat16);
  ASSERT_EQ(rank.launches.size(), 1u);
  const auto& op = rank.last();
  EXPECT_EQ(op.kind, OpKind::gemm);
  EXPECT_EQ(op.m, 64u);
  EXPECT_EQ(op.n, 256u);
  EXPECT_EQ(op.k, 128u);
  EXPECT_EQ(op.dtype, DType::fp16);
  EXPECT_EQ(rank.launches.back().name, "aten::matmul");
  EXPECT_EQ(rank.live_bytes, 2u * (64 * 128 + 128 * 256 + 64 * 256));
}

TEST_F(TorchMatmul, Fp32ProductsRunInTf32BelowTheHighestPrecisionOnThisThreadOnly) {
  auto a = torch::empty({64, 64});
  EXPECT_EQ(torch::get_float32_matmul_precision(), "highest");  // PyTorch's default
  (void)torch::matmul(a, a);
  EXPECT_EQ(rank.last().dtype, DType::fp32);
  torch::set_float32_matmul_precision("high");
  (void)torch::matmul(a, a);
  EXPECT_EQ(rank.last().dtype, DType::tf32);
  (void)torch::matmul(a.to(torch::kFloat16), a.to(torch::kFloat16));
  EXPECT_EQ(rank.last().dtype, DType::fp16);  // 16-bit products are untouched
  std::string elsewhere;
  std::thread([&] { elsewhere = std::string(torch::get_float32_matmul_precision()); }).join();
  EXPECT_EQ(elsewhere, "highest");  // another rank's program keeps its own
  EXPECT_THROW(torch::set_float32_matmul_precision("fast"), torch::Error);
  torch::set_float32_matmul_precision("highest");
}

TEST_F(TorchMatmul, LeadingDimsFoldIntoM) {
  auto x = torch::empty({4, 16, 1024});
  auto w = torch::empty({1024, 4096});
  auto y = x.matmul(w);
  EXPECT_EQ(y.sizes(), (Sizes{4, 16, 4096}));
  const auto& op = rank.last();
  EXPECT_EQ(op.kind, OpKind::gemm);
  EXPECT_EQ(op.m, 64u);
  EXPECT_EQ(op.n, 4096u);
  EXPECT_EQ(op.k, 1024u);
}

TEST_F(TorchMatmul, BatchedOperandsAreOneBmmWithBroadcastBatch) {
  auto a = torch::empty({2, 1, 4, 8});
  auto b = torch::empty({3, 8, 5});
  auto c = torch::matmul(a, b);
  EXPECT_EQ(c.sizes(), (Sizes{2, 3, 4, 5}));
  const auto& op = rank.last();
  EXPECT_EQ(op.kind, OpKind::bmm);
  EXPECT_EQ(op.batch, 6u);
  EXPECT_EQ(op.m, 4u);
  EXPECT_EQ(op.n, 5u);
  EXPECT_EQ(op.k, 8u);
}

TEST_F(TorchMatmul, AttentionScoresAreABmmOverBatchAndHeads) {
  auto q = torch::empty({2, 12, 128, 64}, torch::kFloat16);
  auto k = torch::empty({2, 12, 128, 64}, torch::kFloat16);
  auto s = q.matmul(k.transpose(-2, -1));
  EXPECT_EQ(s.sizes(), (Sizes{2, 12, 128, 128}));
  ASSERT_EQ(rank.launches.size(), 1u);  // the transposed operand is not copied
  EXPECT_EQ(rank.last().kind, OpKind::bmm);
  EXPECT_EQ(rank.last().batch, 24u);
  EXPECT_EQ(rank.last().k, 64u);
}

TEST_F(TorchMatmul, VectorOperandsGainAndLoseADim) {
  auto m = torch::empty({4, 8});
  auto v = torch::empty({8});
  EXPECT_EQ(torch::matmul(m, v).sizes(), (Sizes{4}));
  EXPECT_EQ(rank.last().n, 1u);
  EXPECT_EQ(torch::matmul(v, torch::empty({8, 3})).sizes(), (Sizes{3}));
  EXPECT_EQ(rank.last().m, 1u);
  EXPECT_EQ(torch::matmul(v, v).dim(), 0);
  EXPECT_EQ(torch::matmul(v, torch::empty({5, 8, 2})).sizes(), (Sizes{5, 2}));
  EXPECT_EQ(rank.last().kind, OpKind::bmm);
}

TEST_F(TorchMatmul, ShapeMismatchNamesBothShapes) {
  auto a = torch::empty({4, 8});
  auto b = torch::empty({16, 32});
  EXPECT_EQ(error_of([&] { torch::matmul(a, b); }), "matmul: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x32)");
  EXPECT_EQ(error_of([&] { torch::matmul(torch::empty({2, 4, 8}), b); }),
            "matmul: mat1 and mat2 shapes cannot be multiplied (2x4x8 and 16x32)");
  EXPECT_NE(error_of([&] { torch::matmul(torch::empty({2, 4, 8}), torch::empty({3, 8, 2})); })
                .find("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
            std::string::npos);
  EXPECT_TRUE(rank.launches.empty());
}

TEST_F(TorchMatmul, DtypeMismatchIsAnError) {
  auto a = torch::empty({4, 8}, torch::kFloat16);
  auto b = torch::empty({8, 4}, torch::kFloat32);
  EXPECT_EQ(error_of([&] { torch::matmul(a, b); }),
            "matmul: expected m1 and m2 to have the same dtype, but got: Half != Float");
  EXPECT_THROW(torch::matmul(a, b), torch::Error);
}

TEST_F(TorchMatmul, MmAndBmmCheckTheirRanks) {
  EXPECT_EQ(torch::mm(torch::empty({2, 3}), torch::empty({3, 4})).sizes(), (Sizes{2, 4}));
  EXPECT_EQ(torch::bmm(torch::empty({5, 2, 3}), torch::empty({5, 3, 4})).sizes(), (Sizes{5, 2, 4}));
  EXPECT_EQ(rank.last().kind, OpKind::bmm);
  EXPECT_EQ(rank.last().batch, 5u);
  EXPECT_NE(error_of([&] { torch::mm(torch::empty({2, 3, 4}), torch::empty({4, 4})); }).find("must be a matrix"),
            std::string::npos);
  EXPECT_NE(error_of([&] { torch::bmm(torch::empty({5, 2, 3}), torch::empty({4, 3, 4})); }).find("same number of batches"),
            std::string::npos);
}

TEST_F(TorchMatmul, LinearIsOneGemmWithTheBiasInItsEpilogue) {
  auto x = torch::empty({2, 8, 64}, torch::kFloat16);
  auto w = torch::empty({128, 64}, torch::kFloat16);
  auto b = torch::empty({128}, torch::kFloat16);
  rank.launches.clear();
  auto y = F::linear(x, w, b);
  EXPECT_EQ(y.sizes(), (Sizes{2, 8, 128}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.last().kind, OpKind::gemm);
  EXPECT_EQ(rank.last().m, 16u);
  EXPECT_EQ(rank.last().n, 128u);
  EXPECT_EQ(rank.last().k, 64u);
  EXPECT_EQ(rank.launches.back().name, "aten::linear");
  EXPECT_EQ(error_of([&] { F::linear(x, torch::empty({128, 32}, torch::kFloat16)); }),
            "linear: mat1 and mat2 shapes cannot be multiplied (16x64 and 32x128)");
  EXPECT_NE(error_of([&] { F::linear(x, w, torch::empty({64}, torch::kFloat16)); }).find("bias"), std::string::npos);
}

TEST_F(TorchMatmul, AddmmIsAGemm) {
  auto y = torch::addmm(torch::empty({32}), torch::empty({4, 16}), torch::empty({16, 32}));
  EXPECT_EQ(y.sizes(), (Sizes{4, 32}));
  EXPECT_EQ(rank.last().kind, OpKind::gemm);
}

// --- pointwise ---

TEST_F(TorchPointwise, BinaryOpsBroadcast) {
  auto a = torch::empty({4, 1, 3});
  auto b = torch::empty({2, 1});
  auto c = a + b;
  EXPECT_EQ(c.sizes(), (Sizes{4, 2, 3}));
  EXPECT_EQ(rank.last().kind, OpKind::add);
  EXPECT_EQ(rank.last().elements, 24u);
  EXPECT_EQ(torch::broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}), (Sizes{8, 7, 6, 5}));
  EXPECT_EQ((torch::empty({3}) * torch::empty({})).sizes(), (Sizes{3}));
}

TEST_F(TorchPointwise, BroadcastMismatchNamesTheDimension) {
  auto a = torch::empty({2, 3});
  auto b = torch::empty({2, 4});
  const std::string e = error_of([&] { (void)(a + b); });
  EXPECT_NE(e.find("add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
            std::string::npos);
  EXPECT_NE(e.find("[2, 3] and [2, 4]"), std::string::npos);
}

TEST_F(TorchPointwise, ArithmeticOpsKeepTheirOwnNames) {
  auto a = torch::empty({10}, torch::kBFloat16);
  auto b = torch::empty({10}, torch::kBFloat16);
  (void)(a + b);
  (void)(a - b);
  (void)(a * b);
  (void)(a / b);
  (void)(a * 0.5);
  (void)(1.0 - a);
  (void)(-a);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::mul,
                                                OpKind::sub, OpKind::neg}));
  for (const auto& l : rank.launches) {
    EXPECT_EQ(l.op.elements, 10u);
    EXPECT_EQ(l.op.dtype, DType::bf16);
  }
  EXPECT_EQ(rank.launches[1].name, "aten::sub");
  EXPECT_EQ(rank.launches[3].name, "aten::div");
}

TEST_F(TorchPointwise, MixedDtypesPromoteAsPyTorch) {
  auto half = torch::empty({10}, torch::kFloat16);
  auto bf16 = torch::empty({10}, torch::kBFloat16);
  auto fp32 = torch::empty({10}, torch::kFloat32);
  EXPECT_EQ((half + fp32).dtype(), torch::kFloat32);
  EXPECT_EQ((half * bf16).dtype(), torch::kFloat32);  // neither holds the other
  EXPECT_EQ((torch::empty({10}, torch::kInt64) + half).dtype(), torch::kFloat16);
  // A zero-dim operand defers to a dimensioned one of its category (a loss scale on bf16 values).
  EXPECT_EQ((bf16 * torch::empty({}, torch::kFloat32)).dtype(), torch::kBFloat16);
  EXPECT_EQ(rank.launches.back().op.dtype, DType::bf16);
  // One kernel, no cast, in the result's dtype.
  rank.launches.clear();
  (void)(half - fp32);
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.launches[0].op.dtype, DType::fp32);
  // In place: self keeps its dtype; a floating result cannot go into an integer tensor.
  EXPECT_EQ(half.add_(fp32).dtype(), torch::kFloat16);
  auto ints = torch::empty({10}, torch::kInt64);
  EXPECT_EQ(error_of([&] { ints.add_(half); }), "add_: result type Half can't be cast to the desired output type Long");
  EXPECT_EQ(error_of([&] { (void)(torch::empty({10}, torch::kFloat8_e4m3fn) + half); }),
            "add: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half");
}

TEST_F(TorchPointwise, InPlaceOpsAllocateNothing) {
  auto x = torch::empty({4, 8});
  auto r = torch::empty({8});
  const int allocations = rank.allocations;
  x += r;
  x.mul_(2.0);
  EXPECT_EQ(rank.allocations, allocations);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::add, OpKind::mul}));
  EXPECT_EQ(rank.launches[0].op.elements, 32u);
  EXPECT_NE(error_of([&] { r += x; }).find("output with shape [8] doesn't match the broadcast shape [4, 8]"),
            std::string::npos);
}

TEST_F(TorchPointwise, ActivationsAreOneElementwiseKernel) {
  auto x = torch::empty({3, 7});
  EXPECT_EQ(torch::gelu(x).sizes(), (Sizes{3, 7}));
  (void)torch::gelu(x, "tanh");
  (void)x.relu();
  (void)torch::silu(x);
  (void)x.tanh();
  (void)torch::sigmoid(x);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::gelu, OpKind::gelu, OpKind::relu, OpKind::silu, OpKind::tanh,
                                                OpKind::sigmoid}));
  EXPECT_EQ(rank.last().elements, 21u);
  EXPECT_EQ(rank.launches[2].name, "aten::relu");
  EXPECT_NE(error_of([&] { torch::gelu(x, "fast"); }).find("none or tanh"), std::string::npos);
}

TEST_F(TorchPointwise, DropoutLaunchesOnlyInTraining) {
  auto x = torch::empty({16});
  auto same = torch::dropout(x, 0.1, false);
  EXPECT_TRUE(same.is_same(x));
  EXPECT_TRUE(rank.launches.empty());
  auto y = torch::dropout(x, 0.1, true);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::dropout}));
  EXPECT_NE(error_of([&] { torch::dropout(x, 1.5, true); }).find("between 0 and 1"), std::string::npos);
}

// --- row-wise ---

TEST_F(TorchRowwise, SoftmaxRowsAndColsFollowTheDim) {
  auto x = torch::empty({2, 12, 128, 256}, torch::kFloat16);
  auto y = torch::softmax(x, -1);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(rank.last().kind, OpKind::softmax);
  EXPECT_EQ(rank.last().rows, 2u * 12 * 128);
  EXPECT_EQ(rank.last().cols, 256u);
  (void)x.softmax(1);
  EXPECT_EQ(rank.last().rows, 2u * 128 * 256);
  EXPECT_EQ(rank.last().cols, 12u);
  auto f = torch::softmax(x, -1, torch::kFloat32);
  EXPECT_EQ(f.dtype(), torch::kFloat32);
}

TEST_F(TorchRowwise, LayerNormNormalisesTheTrailingDims) {
  auto x = torch::empty({4, 16, 1024}, torch::kFloat16);
  auto w = torch::empty({1024}, torch::kFloat16);
  auto b = torch::empty({1024}, torch::kFloat16);
  rank.launches.clear();
  auto y = torch::layer_norm(x, {1024}, w, b, 1e-5);
  EXPECT_EQ(y.sizes(), x.sizes());
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.last().kind, OpKind::layernorm);
  EXPECT_EQ(rank.last().rows, 64u);
  EXPECT_EQ(rank.last().cols, 1024u);
  (void)torch::layer_norm(x, {16, 1024});
  EXPECT_EQ(rank.last().rows, 4u);
  EXPECT_EQ(rank.last().cols, 16u * 1024);
  (void)torch::rms_norm(x, {1024}, w);
  EXPECT_EQ(rank.last().kind, OpKind::rmsnorm);
}

TEST_F(TorchRowwise, LayerNormShapeMismatchNamesBothShapes) {
  auto x = torch::empty({2, 8, 1024});
  EXPECT_EQ(error_of([&] { torch::layer_norm(x, {4096}); }),
            "layer_norm: Given normalized_shape=[4096], expected input with shape [*, 4096], but got input of "
            "size[2, 8, 1024]");
  EXPECT_NE(error_of([&] { torch::layer_norm(x, {1024}, torch::empty({512})); }).find("weight of shape [512]"),
            std::string::npos);
}

TEST_F(TorchRowwise, ArgmaxIsARowwiseOpWithLongOutput) {
  auto logits = torch::empty({4, 1, 50257}, torch::kFloat16);
  auto ids = torch::argmax(logits, -1);
  EXPECT_EQ(ids.sizes(), (Sizes{4, 1}));
  EXPECT_EQ(ids.dtype(), torch::kInt64);
  EXPECT_EQ(rank.last().kind, OpKind::softmax);
  EXPECT_EQ(rank.last().rows, 4u);
  EXPECT_EQ(rank.last().cols, 50257u);
  EXPECT_EQ(rank.last().dtype, DType::fp16);
  EXPECT_EQ(logits.argmax(-1, true).sizes(), (Sizes{4, 1, 1}));
  EXPECT_EQ(torch::argmax(logits).dim(), 0);
  EXPECT_EQ(rank.last().rows, 1u);
}

// --- shape ops ---

TEST_F(TorchOps, CatCopiesTheOutput) {
  auto a = torch::empty({2, 3, 8});
  auto b = torch::empty({2, 5, 8});
  auto c = torch::cat({a, b}, 1);
  EXPECT_EQ(c.sizes(), (Sizes{2, 8, 8}));
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, 128u);
  EXPECT_EQ(rank.launches.back().name, "aten::cat");
  EXPECT_EQ(error_of([&] { torch::cat({a, torch::empty({2, 3, 4})}, 1); }),
            "cat: Sizes of tensors must match except in dimension 1. Expected size 8 but got size 4 for tensor number 1 "
            "in the list.");
  EXPECT_EQ(torch::stack({a, a}, 0).sizes(), (Sizes{2, 2, 3, 8}));
}

TEST_F(TorchOps, ConstantPadWritesThePaddedOutputInOneKernel) {
  namespace F = torch::nn::functional;
  auto x = torch::empty({5, 8});
  const std::size_t before = rank.launches.size();
  auto y = F::pad(x, {0, 0, 0, 3});  // 3 rows after, as a batch padded to a multiple of ranks
  EXPECT_EQ(y.sizes(), (Sizes{8, 8}));
  EXPECT_EQ(rank.launches.size(), before + 1);
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, 64u);
  EXPECT_EQ(rank.launches.back().name, "aten::constant_pad_nd");
  EXPECT_EQ(F::pad(x, {1, 2}).sizes(), (Sizes{5, 11}));
  EXPECT_EQ(F::pad(x, {0, 0, -2, 0}).sizes(), (Sizes{3, 8}));  // negative counts crop
  EXPECT_EQ(error_of([&] { F::pad(x, {1, 2, 3}); }),
            "pad: Padding length must be divisible by 2 and at most twice the input's 2 dims, got 3");
  EXPECT_EQ(error_of([&] { F::pad(x, {-9, 0}); }), "pad: the padded size of dim 1 would be -1, which is negative");
}

TEST_F(TorchOps, CopyIntoAKvCacheSliceAllocatesNothing) {
  torch::Tensor cache;
  {
    torch::MemoryUseGuard g(torch::MemoryUse::kv_cache);
    cache = torch::empty({2, 8, 1024, 64}, torch::kFloat16);
  }
  auto k_new = torch::empty({2, 8, 1, 64}, torch::kFloat16);
  const int allocations = rank.allocations;
  cache.narrow(2, 17, 1).copy_(k_new);
  EXPECT_EQ(rank.allocations, allocations);
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, 2u * 8 * 64);
  EXPECT_EQ(rank.launches.back().name, "aten::copy_");
  auto keys = cache.narrow(2, 0, 18);
  EXPECT_EQ(keys.sizes(), (Sizes{2, 8, 18, 64}));
  EXPECT_NE(error_of([&] { cache.narrow(2, 0, 2).copy_(k_new.expand({2, 8, 3, 64})); }).find("doesn't match"),
            std::string::npos);
}

TEST_F(TorchOps, EmbeddingGathersRowsOfTheTable) {
  auto table = torch::empty({50257, 768}, torch::kFloat16);
  auto ids = torch::empty({4, 16}, torch::kInt64);
  auto h = torch::embedding(table, ids);
  EXPECT_EQ(h.sizes(), (Sizes{4, 16, 768}));
  EXPECT_EQ(h.dtype(), torch::kFloat16);
  const auto& op = rank.last();
  EXPECT_EQ(op.kind, OpKind::embedding);
  EXPECT_EQ(op.rows, 64u);
  EXPECT_EQ(op.cols, 768u);
  EXPECT_EQ(op.vocab, 50257u);
  EXPECT_EQ(op.dtype, DType::fp16);
  EXPECT_NE(error_of([&] { torch::embedding(table, torch::empty({4}, torch::kFloat16)); })
                .find("'indices' to have one of the following scalar types: Long, Int; but got Half"),
            std::string::npos);
}

TEST_F(TorchOps, ToAnotherDtypeIsACopy) {
  auto x = torch::empty({8}, torch::kFloat16);
  EXPECT_TRUE(x.to(torch::kFloat16).is_same(x));
  auto y = x.to(torch::kFloat32);
  EXPECT_EQ(y.dtype(), torch::kFloat32);
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().dtype, DType::fp32);
}

// --- attention ---

TEST_F(TorchAttention, SdpaWithGqaKeepsTheQueryShape) {
  auto q = torch::empty({2, 32, 128, 128}, torch::kBFloat16);
  auto k = torch::empty({2, 8, 128, 128}, torch::kBFloat16);
  auto v = torch::empty({2, 8, 128, 128}, torch::kBFloat16);
  auto o = torch::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  EXPECT_EQ(o.sizes(), (Sizes{2, 32, 128, 128}));
  ASSERT_EQ(rank.launches.size(), 1u);
  const auto& op = rank.last();
  EXPECT_EQ(op.kind, OpKind::attention);
  EXPECT_EQ(op.batch, 2u);
  EXPECT_EQ(op.heads, 32u);
  EXPECT_EQ(op.kv_heads, 8u);
  EXPECT_EQ(op.seq_q, 128u);
  EXPECT_EQ(op.seq_kv, 128u);
  EXPECT_EQ(op.head_dim, 128u);
  EXPECT_TRUE(op.causal);
  EXPECT_EQ(op.dtype, DType::bf16);
}

TEST_F(TorchAttention, DecodeAttendsOneQueryToTheWholeCache) {
  auto q = torch::empty({4, 12, 1, 64}, torch::kFloat16);
  auto kv = torch::empty({4, 12, 1024, 64}, torch::kFloat16);
  auto o = torch::scaled_dot_product_attention(q, kv.narrow(2, 0, 300), kv.narrow(2, 0, 300));
  EXPECT_EQ(o.sizes(), (Sizes{4, 12, 1, 64}));
  EXPECT_EQ(rank.last().seq_q, 1u);
  EXPECT_EQ(rank.last().seq_kv, 300u);
  EXPECT_FALSE(rank.last().causal);
}

TEST_F(TorchAttention, SdpaChecksHeadsDimsAndMask) {
  auto q = torch::empty({2, 12, 16, 64});
  auto k = torch::empty({2, 5, 16, 64});
  EXPECT_EQ(error_of([&] { torch::scaled_dot_product_attention(q, k, k); }),
            "scaled_dot_product_attention: number of heads in query (12) must be a multiple of the number of heads in "
            "key/value (5)");
  auto k2 = torch::empty({2, 12, 16, 32});
  EXPECT_NE(error_of([&] { torch::scaled_dot_product_attention(q, k2, k2); }).find("same head dim"), std::string::npos);
  auto mask = torch::empty({1, 1, 16, 16});
  EXPECT_EQ(torch::scaled_dot_product_attention(q, q, q, mask).sizes(), q.sizes());
  EXPECT_NE(error_of([&] { torch::scaled_dot_product_attention(q, q, q, mask, 0.0, true); }).find("attn_mask"),
            std::string::npos);
  EXPECT_NE(error_of([&] { torch::scaled_dot_product_attention(q, q, q, torch::empty({16, 8})); }).find("broadcast"),
            std::string::npos);
  auto k_short = torch::empty({2, 12, 8, 64});
  EXPECT_NE(error_of([&] { torch::scaled_dot_product_attention(q, k_short, k_short, {}, 0.0, true); })
                .find("seq_q (16) <= seq_kv (8)"),
            std::string::npos);
  auto qh = torch::empty({2, 12, 16, 64}, torch::kFloat16);
  EXPECT_NE(error_of([&] { torch::scaled_dot_product_attention(qh, q, q); }).find("same dtype"), std::string::npos);
}

// --- cuda, scopes ---

TEST_F(TorchOps, CudaSynchronizeGraphsAndScopesReachTheRank) {
  torch::cuda::synchronize();
  EXPECT_EQ(rank.syncs, (std::vector<std::string>{"cuda::synchronize"}));
  EXPECT_TRUE(torch::cuda::is_available());
  {
    torch::RecordScope layer("h.0");
    torch::cuda::CUDAGraph graph;
    graph.capture_begin();
    auto y = torch::gelu(torch::empty({8}));
    graph.capture_end();
    EXPECT_THROW(graph.capture_end(), torch::Error);
  }
  EXPECT_EQ(rank.events, (std::vector<std::string>{"begin h.0", "graph_begin", "graph_end", "end"}));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::gelu}));
}

TEST_F(TorchSelect, ComparisonsWhereMaskingAndSamplingAreOneKernelEach) {
  const auto x = torch::empty({4, 16}, torch::kFloat16);
  const auto lt = torch::lt(x, torch::empty({16}, torch::kFloat16));
  EXPECT_EQ(lt.dtype(), torch::kBool);
  EXPECT_EQ(lt.sizes(), (Sizes{4, 16}));
  EXPECT_EQ(torch::gt(x, 0.5).dtype(), torch::kBool);
  const auto w = torch::where(lt, x, torch::empty({4, 16}, torch::kFloat32));
  EXPECT_EQ(w.dtype(), torch::kFloat32);  // promoted
  const auto causal = torch::triu(torch::ones({16, 16}, torch::kBool), 1);
  EXPECT_EQ(torch::masked_fill(torch::empty({2, 4, 16, 16}), causal, -1e30).sizes(), (Sizes{2, 4, 16, 16}));
  const auto tokens = torch::multinomial(torch::softmax(x, -1), 1);
  EXPECT_EQ(tokens.dtype(), torch::kInt64);
  EXPECT_EQ(tokens.sizes(), (Sizes{4, 1}));
  EXPECT_EQ(rank.launches.size(), 9u);  // lt, gt, where, ones, triu, masked_fill (copy, fill), softmax, multinomial
  EXPECT_THROW(torch::masked_fill(x, torch::empty({4, 16}), 0.0), torch::Error);  // not a Bool mask
  EXPECT_THROW(torch::multinomial(torch::empty({4, 16}), 17), torch::Error);      // more than C without replacement
  EXPECT_THROW(torch::tril(torch::empty({4})), torch::Error);
}

TEST_F(TorchSelect, WhereAndMaskedFillPassGradientsThroughTheirMask) {
  auto scores = torch::empty({8, 8}).requires_grad_();
  const auto mask = torch::triu(torch::ones({8, 8}, torch::kBool), 1);
  auto loss = torch::sum(torch::softmax(torch::masked_fill(scores, mask, -1e9), -1));
  loss.backward();
  ASSERT_TRUE(scores.grad().defined());
  EXPECT_EQ(scores.grad().sizes(), (Sizes{8, 8}));
  auto a = torch::empty({8}).requires_grad_();
  torch::sum(torch::where(torch::gt(a, 0.0), a, torch::zeros({8}))).backward();
  EXPECT_TRUE(a.grad().defined());
}

TEST_F(TorchSelect, IndexSelectGathersTheOutputAndItsBackwardAddsIntoZeros) {
  auto w = torch::empty({100, 64}).requires_grad_();
  const auto idx = torch::tensor({3, 7, 7});
  rank.launches.clear();
  const auto rows = torch::index_select(w, 0, idx);
  EXPECT_EQ(rows.sizes(), (Sizes{3, 64}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.launches[0].op.elements, 3u * 64);
  torch::sum(rows).backward();
  EXPECT_EQ(w.grad().sizes(), (Sizes{100, 64}));
  auto cache = torch::empty({2, 16, 8});
  torch::index_copy_(cache, 1, torch::tensor({4, 5}), torch::empty({2, 2, 8}));
  EXPECT_EQ(rank.launches.back().op.elements, 2u * 2 * 8);
  EXPECT_THROW(torch::index_select(w, 0, torch::empty({3})), torch::Error);  // a float index
  EXPECT_THROW(torch::index_copy_(cache, 1, torch::tensor({4}), torch::empty({2, 3, 8})), torch::Error);
}

TEST_F(TorchSelect, SeveralIndicesBroadcastTogetherInOneGather) {
  auto x = torch::empty({4, 5, 6}).requires_grad_();
  const auto i = torch::tensor({0, 1, 2});
  const auto j = torch::tensor({1, 2}).view({2, 1});
  rank.launches.clear();
  // Adjacent indexed dims: the broadcast shape [2, 3] takes their place.
  const auto adjacent = torch::index(x, {i, j});
  EXPECT_EQ(adjacent.sizes(), (Sizes{2, 3, 6}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.launches[0].op.elements, 2u * 3 * 6);  // one gather over the output
  // Dims apart: the broadcast shape comes first.
  EXPECT_EQ(torch::index(x, {i, std::nullopt, i}).sizes(), (Sizes{3, 5}));
  EXPECT_EQ(torch::index(x, {std::nullopt, i.narrow(0, 0, 2), i.narrow(0, 1, 2)}).sizes(), (Sizes{4, 2}));
  torch::sum(adjacent).backward();
  EXPECT_EQ(x.grad().sizes(), (Sizes{4, 5, 6}));
  auto y = torch::empty({4, 5, 6});
  torch::index_put_(y, {i, j}, torch::empty({3, 6}));  // broadcast to [2, 3, 6]
  EXPECT_EQ(rank.launches.back().op.elements, 2u * 3 * 6);
  EXPECT_THROW(torch::index_put_(y, {i, j}, torch::empty({4, 6})), torch::Error);
  EXPECT_THROW(torch::index(y, {i, j, i, i}), torch::Error);                       // too many
  EXPECT_THROW(torch::index(y, {torch::empty({2}), std::nullopt}), torch::Error);  // a float index
  EXPECT_THROW(torch::index(y, {std::nullopt}), torch::Error);                     // no index at all
  EXPECT_THROW(torch::randint(5, 5, {3}), torch::Error);
  EXPECT_EQ(torch::randint(0, 5, {3}).dtype(), torch::kInt64);
}

TEST_F(TorchSelect, ComplexRotaryTablesArePolarViewsAndOneProduct) {
  const auto angles = torch::empty({16, 32});
  rank.launches.clear();
  const auto cis = torch::polar(torch::ones_like(angles), angles);
  EXPECT_EQ(cis.dtype(), torch::kComplexFloat);
  ASSERT_EQ(rank.launches.size(), 2u);  // ones_like, polar
  EXPECT_EQ(rank.launches[1].op.kind, runtime::OpKind::polar);
  // A complex64 element is one fp64 one: 8 bytes in (abs and angle), 8 out.
  EXPECT_EQ(rank.launches[1].op.dtype, DType::fp64);
  EXPECT_EQ(rank.launches[1].op.elements, 16u * 32);
  auto q = torch::empty({2, 16, 4, 64});
  rank.launches.clear();
  const auto pairs = torch::view_as_complex(q.view({2, 16, 4, 32, 2}));
  EXPECT_EQ(pairs.sizes(), (Sizes{2, 16, 4, 32}));
  EXPECT_EQ(pairs.strides(), (Sizes{16 * 4 * 32, 4 * 32, 32, 1}));
  EXPECT_TRUE(rank.launches.empty());  // views
  const auto rotated = torch::view_as_real(pairs * cis.view({1, 16, 1, 32}));
  EXPECT_EQ(rotated.sizes(), (Sizes{2, 16, 4, 32, 2}));
  EXPECT_EQ(rotated.dtype(), torch::kFloat);
  ASSERT_EQ(rank.launches.size(), 1u);  // the product
  EXPECT_EQ(rank.launches[0].op.kind, runtime::OpKind::mul);
  EXPECT_EQ(rank.launches[0].op.elements, 2u * 16 * 4 * 32);
  // Promotion: complex over real; double precision on either side gives ComplexDouble.
  EXPECT_EQ(torch::promote_types(torch::kComplexFloat, torch::kHalf), torch::kComplexFloat);
  EXPECT_EQ(torch::promote_types(torch::kComplexFloat, torch::kDouble), torch::kComplexDouble);
  EXPECT_EQ(torch::promote_types(torch::kLong, torch::kComplexFloat), torch::kComplexFloat);
  EXPECT_EQ(torch::element_bits(torch::kComplexDouble), 128u);
  EXPECT_THROW(torch::view_as_complex(torch::empty({4, 3})), torch::Error);                // last dim not 2
  EXPECT_THROW(torch::view_as_complex(torch::empty({2, 4}).t()), torch::Error);            // last stride not 1
  EXPECT_THROW(torch::view_as_complex(torch::empty({6}).narrow(0, 1, 4).view({2, 2})), torch::Error);  // odd offset
  EXPECT_THROW(torch::view_as_real(torch::empty({4})), torch::Error);                       // not complex
  EXPECT_THROW(torch::polar(angles, torch::empty({16, 32}, torch::kHalf)), torch::Error);
  // Products and attention refuse complex operands, naming the argument.
  EXPECT_THROW(torch::matmul(cis, cis.t()), torch::Error);
  const auto real_q = torch::empty({1, 2, 16, 32});
  const auto complex_k = torch::view_as_complex(torch::empty({1, 2, 16, 32, 2}));
  try {
    (void)torch::scaled_dot_product_attention(real_q, complex_k, real_q);
    ADD_FAILURE() << "a complex key was accepted";
  } catch (const torch::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'key'"), std::string::npos) << e.what();
  }
}

TEST_F(TorchSelect, MathOpsAreOneKernelAndTheirBackwardProducts) {
  auto x = torch::empty({8, 64}).requires_grad_();
  rank.launches.clear();
  auto y = torch::rsqrt(torch::pow(x, 2.0) + 1e-6) * torch::sqrt(torch::abs(x)) + torch::sin(x) * torch::cos(x);
  EXPECT_EQ(rank.launches.size(), 10u);  // pow, add, rsqrt, abs, sqrt, mul, sin, cos, mul, add
  rank.launches.clear();
  torch::sum(y).backward();
  EXPECT_EQ(x.grad().sizes(), (Sizes{8, 64}));
  // Each function's derivative is computed from what it saved: a cos for sin, a sin for cos, a
  // pow for pow and for rsqrt, a sign for abs, with the products and the sums into x's gradient.
  std::map<runtime::OpKind, int> kinds;
  for (const auto& l : rank.launches) ++kinds[l.op.kind];
  EXPECT_EQ(kinds[runtime::OpKind::cos], 1);
  EXPECT_EQ(kinds[runtime::OpKind::sin], 1);
  EXPECT_EQ(kinds[runtime::OpKind::pow], 2);
  EXPECT_EQ(kinds[runtime::OpKind::abs], 1);
  EXPECT_GE(kinds[runtime::OpKind::mul], 6);
  rank.launches.clear();
  const auto e = torch::pow(2.0, torch::empty({8}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.launches[0].op.kind, runtime::OpKind::pow);
  EXPECT_EQ(e.sizes(), (Sizes{8}));
}

TEST_F(TorchSelect, MeanOverDimsIsOneReductionAndItsBackwardDividesOverTheInput) {
  auto x = torch::empty({4, 5, 6}).requires_grad_();
  rank.launches.clear();
  const auto m = torch::mean(x, {0, 2}, /*keepdim=*/true);
  EXPECT_EQ(m.sizes(), (Sizes{1, 5, 1}));
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(torch::mean(x, {-1}).sizes(), (Sizes{4, 5}));
  rank.launches.clear();
  torch::sum(m).backward();
  EXPECT_EQ(x.grad().sizes(), (Sizes{4, 5, 6}));
  // The sum's own kernel, then the mean's divide over the input's size.
  ASSERT_FALSE(rank.launches.empty());
  EXPECT_EQ(rank.launches.back().op.elements, 4u * 5 * 6);
  EXPECT_THROW(torch::mean(x, {0, 0}), torch::Error);
  EXPECT_THROW(torch::mean(torch::empty({3}, torch::kInt64), {0}), torch::Error);
}

TEST_F(TorchOps, CatTakesALegacyEmptyTensorBesideAnyShapeAsATenDoes) {
  auto x = torch::empty({2, 3}).requires_grad_();
  auto y = torch::cat({torch::empty({0}), x, torch::empty({0})}, 1);
  EXPECT_EQ(y.sizes(), (Sizes{2, 3}));
  EXPECT_EQ(rank.last().elements, 6u);
  torch::sum(y).backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_NE(error_of([] { torch::cat({torch::empty({0}), torch::empty({0}, torch::kInt64), torch::empty({2, 3})}); })
                .find("same dtype"),
            std::string::npos);
}

// --- convolutions and batch norm ---

TEST_F(TorchOps, AConvolutionIsAnImplicitGemmThenItsBiasAndItsBackwardTwoMore) {
  auto x = torch::empty({8, 64, 56, 56}, torch::kFloat16).requires_grad_();
  auto w = torch::empty({128, 64, 3, 3}, torch::kFloat16).requires_grad_();
  auto b = torch::empty({128}, torch::kFloat16).requires_grad_();
  auto y = F::conv2d(x, w, b, {2}, {1});
  EXPECT_EQ(y.sizes(), (Sizes{8, 128, 28, 28}));
  ASSERT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::conv, OpKind::add}));
  const auto& op = rank.launches[0].op;
  EXPECT_EQ(op.m, 8u * 28 * 28);
  EXPECT_EQ(op.n, 128u);
  EXPECT_EQ(op.k, 64u * 9);
  EXPECT_EQ(op.elements, 8u * 64 * 56 * 56);
  EXPECT_EQ(op.window, 9u);
  EXPECT_EQ(op.stride, 2u);
  EXPECT_FALSE(op.channels_last);
  EXPECT_EQ(rank.launches[0].name, "aten::convolution");
  rank.launches.clear();
  torch::sum(y).backward();
  std::vector<OpKind> kinds = rank.kinds();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), OpKind::conv_dgrad), 1);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), OpKind::conv_wgrad), 1);
  for (const auto& l : rank.launches) {
    if (l.op.kind == OpKind::conv_wgrad) {
      EXPECT_EQ(l.op.k, 8u * 28 * 28);  // every output position
    }
  }
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_EQ(w.grad().sizes(), w.sizes());
  EXPECT_EQ(b.grad().sizes(), b.sizes());
}

TEST_F(TorchOps, GroupedAndChannelsLastConvolutionsAndTheirErrors) {
  auto x = torch::empty({2, 32, 8, 8}, torch::kFloat16).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  (void)F::conv2d(x, torch::empty({32, 1, 3, 3}, torch::kFloat16), {}, {1}, {1}, {1}, 32);  // depthwise
  EXPECT_EQ(rank.last().batch, 32u);
  EXPECT_EQ(rank.last().n, 1u);
  EXPECT_EQ(rank.last().k, 9u);
  EXPECT_TRUE(rank.last().channels_last);
  (void)F::conv1d(torch::empty({2, 4, 100}), torch::empty({6, 4, 5}));
  EXPECT_EQ(rank.last().m, 2u * 96);
  (void)F::conv3d(torch::empty({1, 2, 4, 8, 8}), torch::empty({3, 2, 3, 3, 3}), {}, {1}, {0, 1, 1});
  EXPECT_EQ(rank.last().m, 2u * 8 * 8);
  EXPECT_EQ(rank.last().window, 27u);
  EXPECT_NE(error_of([] { F::conv2d(torch::empty({1, 3, 8, 8}), torch::empty({4, 2, 3, 3})); }).find("expected input"),
            std::string::npos);
  EXPECT_NE(error_of([] { F::conv2d(torch::empty({1, 3, 2, 2}), torch::empty({4, 3, 3, 3})); }).find("Kernel size"),
            std::string::npos);
  // A transposed convolution: the input gradient of the convolution it transposes.
  rank.launches.clear();
  auto up = torch::convolution(torch::empty({1, 3, 8, 8}), torch::empty({3, 4, 2, 2}), {}, {2}, {0}, {1}, true, {0}, 1);
  EXPECT_EQ(up.sizes(), (Sizes{1, 4, 16, 16}));
  EXPECT_EQ(rank.last().kind, OpKind::conv_dgrad);
  EXPECT_EQ(rank.last().m, 16u * 16);  // its output's positions
  EXPECT_EQ(rank.last().n, 4u);
  EXPECT_EQ(rank.last().k, 3u * 4);
  EXPECT_NE(error_of([] {
              torch::convolution(torch::empty({1, 3, 8, 8}), torch::empty({5, 4, 3, 3}), {}, {1}, {0}, {1}, true, {0}, 1);
            }).find("transposed=1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              torch::convolution(torch::empty({1, 3, 8, 8}), torch::empty({3, 4, 3, 3}), {}, {1}, {0}, {1}, true, {1}, 1);
            }).find("output padding must be smaller"),
            std::string::npos);
  EXPECT_NE(error_of([] { F::conv2d(torch::empty({1, 3, 8, 8}), torch::empty({4, 3, 3, 3}), {}, {1, 1, 1}); })
                .find("stride must have 1 or 2 values"),
            std::string::npos);
}

TEST_F(TorchOps, BatchNormReducesInTrainingAndNormalisesAlways) {
  auto x = torch::empty({8, 16, 10, 10}).requires_grad_();
  auto w = torch::empty({16}).requires_grad_();
  auto mean = torch::empty({16});
  auto var = torch::empty({16});
  auto y = torch::batch_norm(x, w, {}, mean, var, true);
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::sum, OpKind::batchnorm}));
  rank.launches.clear();
  torch::sum(y).backward();
  std::vector<OpKind> kinds = rank.kinds();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), OpKind::batchnorm_backward), 1);
  EXPECT_EQ(w.grad().sizes(), w.sizes());
  rank.launches.clear();
  (void)F::batch_norm(x.detach(), mean, var);  // eval: the running statistics, one pass
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::batchnorm}));
  EXPECT_NE(error_of([&] { F::batch_norm(x.detach(), {}, {}); }).find("running_mean and running_var"),
            std::string::npos);
  EXPECT_NE(error_of([&] { torch::batch_norm(x.detach(), torch::empty({3}), {}, {}, {}, true); }).find("16 values"),
            std::string::npos);
}

// --- matmul's folds and ATen's own entries (torch/aten.hpp) ---

TEST_F(TorchMatmul, AnOperandNoViewCanFoldIsCopiedFirstAsATenReshapes) {
  // Attention's q [B, H, T, D] and k^T read through a transpose of [B, T, H, D]: bmm's batch dims
  // cannot fold by a view, so each is copied before the product; contiguous operands are not.
  auto q = torch::empty({2, 16, 4, 8}, torch::kFloat16).transpose(1, 2);
  auto k = torch::empty({2, 16, 4, 8}, torch::kFloat16).transpose(1, 2);
  (void)torch::matmul(q, k.transpose(-2, -1));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::copy, OpKind::copy, OpKind::bmm}));
  EXPECT_EQ(rank.launches[0].name, "aten::clone");
  EXPECT_EQ(rank.launches[0].op.elements, 2u * 4 * 16 * 8);
  rank.launches.clear();
  (void)torch::matmul(torch::empty({2, 4, 16, 8}, torch::kFloat16), torch::empty({2, 4, 8, 16}, torch::kFloat16));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::bmm}));
  rank.launches.clear();
  // A transposed 3-D input against a matrix: its rows fold only through a copy.
  (void)torch::matmul(torch::empty({8, 4, 32}, torch::kFloat16).transpose(0, 1), torch::empty({32, 64}, torch::kFloat16));
  EXPECT_EQ(rank.kinds(), (std::vector<OpKind>{OpKind::copy, OpKind::gemm}));
}

TEST_F(TorchOps, AtenEntriesLaunchWhatTheTorchLayersAutogradLaunches) {
  auto x = torch::empty({64, 128}, torch::kFloat16);
  auto g = torch::empty({64, 128}, torch::kFloat16);
  auto dx = torch::aten::activation_backward("gelu", g, x, "aten::gelu_backward");
  EXPECT_EQ(dx.sizes(), x.sizes());
  EXPECT_EQ(rank.last().kind, OpKind::gelu_backward);
  auto [gi, gw, gb] = torch::aten::native_layer_norm_backward(g, x, 1, torch::empty({128}, torch::kFloat16),
                                                              torch::Tensor(), {true, true, false});
  EXPECT_EQ(rank.last().kind, OpKind::layernorm_backward);
  EXPECT_EQ(rank.last().rows, 64u);
  EXPECT_EQ(rank.last().cols, 128u);
  EXPECT_TRUE(gi.defined() && gw.defined() && !gb.defined());
  auto table = torch::aten::embedding_dense_backward(g, 1000);
  EXPECT_EQ(table.sizes(), (Sizes{1000, 128}));
  auto v = torch::aten::as_strided(x, {128, 64}, {1, 128}, 0, "aten::t");
  EXPECT_EQ(v.strides(), (Sizes{1, 128}));
  EXPECT_TRUE(rank.has_host_op("aten::t"));
  EXPECT_THROW(torch::aten::activation_backward("erf", g, x, "aten::erf_backward"), torch::Error);
  EXPECT_THROW(torch::aten::as_strided(x, {2, 2}, {1}, 0), torch::Error);
}

TEST_F(TorchOps, AnOpWithNoModelCostsItsBytesOnceAsAMemoryBoundKernel) {
  const torch::Tensor in[] = {torch::empty({1024}, torch::kFloat32), torch::empty({1024}, torch::kFloat16)};
  const torch::aten::OutputSpec out[] = {{{1024}, torch::kFloat32}};
  auto made = torch::aten::memory_bound("aten::erf", in, out);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].sizes(), (Sizes{1024}));
  EXPECT_EQ(rank.launches.back().name, "aten::erf");
  // 4 KiB + 2 KiB read, 4 KiB written: as a byte copy, half of it each way.
  EXPECT_EQ(rank.last().kind, OpKind::copy);
  EXPECT_EQ(rank.last().elements, (4096u + 2048u + 4096u) / 2);
}

}  // namespace
}  // namespace syntorch
