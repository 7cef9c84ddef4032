// Paged attention over a packed batch: the same mechanism as contiguous FlashAttention where the
// batch is uniform, each sequence's own causal pairs, whole pages read, and a mixed batch costing
// what its parts need of the device.

#include <gtest/gtest.h>

#include "predict_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using runtime::OpDesc;
using runtime::OpKind;
using runtime_testing::config;
using runtime_testing::policy;

// Sequences given as (query tokens, context tokens) pairs, Llama-3-8B's heads.
OpDesc paged(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& seqs, std::uint64_t page = 16) {
  OpDesc op;
  op.kind = OpKind::paged_attention;
  op.heads = 32;
  op.kv_heads = 8;
  op.head_dim = 128;
  op.page_tokens = page;
  op.batch = seqs.size();
  for (const auto& [q, kv] : seqs) {
    op.seq_q += q;
    op.seq_kv += kv;
    op.splits.push_back(q);
  }
  for (const auto& s : seqs) op.splits.push_back(s.second);
  return op;
}

double time_s(const hw::Machine& m, const OpDesc& op, const std::string& impl = "flash_v3") {
  runtime::Predictor p(m, policy("attention=" + impl + ",paged_attention=" + impl));
  return p.predict(op).time_s;
}

TEST(PagedAttention, AUniformDecodeBatchCostsWhatContiguousDecodeCosts) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  OpDesc contiguous;
  contiguous.kind = OpKind::attention;
  contiguous.batch = 64;
  contiguous.heads = 32;
  contiguous.kv_heads = 8;
  contiguous.head_dim = 128;
  contiguous.seq_q = 1;
  contiguous.seq_kv = 2048;
  const OpDesc batch = paged(std::vector<std::pair<std::uint64_t, std::uint64_t>>(64, {1, 2048}));
  EXPECT_NEAR(time_s(h100, batch) / time_s(h100, contiguous), 1.0, 0.05);
  // The same batch without per-sequence lengths: split evenly, the same op.
  OpDesc even = batch;
  even.splits.clear();
  EXPECT_DOUBLE_EQ(time_s(h100, even), time_s(h100, batch));
}

TEST(PagedAttention, FlopsAreEachSequencesCausalPairs) {
  const OpDesc batch = paged({{1, 3000}, {512, 512}, {256, 1280}});
  double expected = 0;
  for (const auto& [q, kv] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 3000}, {512, 512}, {256, 1280}}) {
    OpDesc one;
    one.kind = OpKind::attention;
    one.batch = 1;
    one.heads = 32;
    one.kv_heads = 8;
    one.head_dim = 128;
    one.seq_q = q;
    one.seq_kv = kv;
    one.causal = true;
    expected += runtime::op_flops(one);
  }
  EXPECT_DOUBLE_EQ(runtime::op_flops(batch), expected);
}

TEST(PagedAttention, APartlyFilledPageIsReadWhole) {
  // 17 tokens of context take two pages of 16: 32 tokens of keys and values read.
  const double one_page = runtime::op_min_bytes(paged({{1, 16}}));
  const double two_pages = runtime::op_min_bytes(paged({{1, 17}}));
  const double per_token = 2.0 * 8 * 128 * 2;  // keys and values, 8 KV heads of 128, fp16
  EXPECT_DOUBLE_EQ(two_pages - one_page, 16 * per_token);
  EXPECT_DOUBLE_EQ(runtime::op_min_bytes(paged({{1, 17}}, 0)) - one_page, per_token);
}

TEST(PagedAttention, AMixedBatchTakesAtLeastEachPartAndAtMostBoth) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> decode(128, {1, 4096});
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> prefill = {{2048, 2048}, {1024, 3072}};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> mixed = decode;
  mixed.insert(mixed.end(), prefill.begin(), prefill.end());
  const double d = time_s(h100, paged(decode)), p = time_s(h100, paged(prefill)), m = time_s(h100, paged(mixed));
  EXPECT_GE(m, 0.95 * std::max(d, p));
  EXPECT_LE(m, 1.05 * (d + p));
}

TEST(PagedAttention, FewLongDecodesSplitTheirKeysAndCombineTheSplitsWhileAFullGridDoesNot) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Predictor p(h100, policy("paged_attention=flash_v3"));
  // 2 sequences x 8 KV heads = 16 CTAs on 132 SMs: split, then a combine kernel.
  const runtime::Prediction few = p.predict(paged({{1, 32768}, {1, 32768}}));
  ASSERT_EQ(few.kernels.size(), 2u);
  EXPECT_NE(few.kernels[0].name.find("split-kv"), std::string::npos) << few.kernels[0].name;
  EXPECT_NE(few.kernels[1].name.find("combine"), std::string::npos) << few.kernels[1].name;
  // 64 sequences fill the device (512 CTAs): one kernel, no split.
  const runtime::Prediction many = p.predict(paged(std::vector<std::pair<std::uint64_t, std::uint64_t>>(64, {1, 32768})));
  ASSERT_EQ(many.kernels.size(), 1u);
  EXPECT_EQ(many.kernels[0].name.find("split-kv"), std::string::npos) << many.kernels[0].name;
  // Splitting pays: the two long decodes take far less than 1/32 of the 64.
  EXPECT_LT(few.time_s, many.time_s / 8);
}

// FlashAttention-2 computes whole query tiles: in a batch with a prefill chunk (no head swap, 128
// rows a tile) each decode token pays for 128 rows per query head, so the mixed batch costs far
// more than its parts, as measured (calibration/measured_h100.csv H172, H173: 340 us for 64
// decodes, 998 us with a 512-token chunk in their place of one); FlashAttention-3's packed heads
// do not.
TEST(PagedAttention, FlashAttention2PadsDecodeTokensOfAMixedBatchToWholeQueryTiles) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> decode(63, {1, 2048});
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> chunk = {{512, 2048}};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> mixed = chunk;
  mixed.insert(mixed.end(), decode.begin(), decode.end());
  const double d2 = time_s(h100, paged(decode), "flash_v2"), c2 = time_s(h100, paged(chunk), "flash_v2");
  const double m2 = time_s(h100, paged(mixed), "flash_v2");
  EXPECT_GT(m2, 1.5 * (d2 + c2));
  const double m3 = time_s(h100, paged(mixed), "flash_v3");
  EXPECT_LT(m3, 1.05 * (time_s(h100, paged(decode), "flash_v3") + time_s(h100, paged(chunk), "flash_v3")));
}

// One query a sequence under GQA: FlashAttention-2 swaps the query heads of a KV head into the
// rows, with the queries copied into that layout and the output and log-sum-exp copied back
// (four kernels, as the profiler shows PyTorch's varlen call); under MQA the layout is a view
// and one kernel runs (256 sequences fill the device: no split either).
TEST(PagedAttention, FlashAttention2SwapsGqaHeadsIntoRowsWithCopiesAround) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Predictor p(h100, policy("paged_attention=flash_v2"));
  const runtime::Prediction gqa = p.predict(paged(std::vector<std::pair<std::uint64_t, std::uint64_t>>(64, {1, 1024}), 0));
  ASSERT_EQ(gqa.kernels.size(), 4u);
  EXPECT_NE(gqa.kernels[0].name.find("swapped layout"), std::string::npos) << gqa.kernels[0].name;
  EXPECT_NE(gqa.kernels[1].name.find("GQA heads as rows"), std::string::npos) << gqa.kernels[1].name;
  OpDesc mqa = paged(std::vector<std::pair<std::uint64_t, std::uint64_t>>(256, {1, 1024}), 0);
  mqa.heads = 8;
  mqa.kv_heads = 1;
  EXPECT_EQ(p.predict(mqa).kernels.size(), 1u);
}

// CTAs of uneven work finish at different times: a lone causal prefill's last query blocks (the
// longest CTAs) start late and end after the even share, where a batch of 16 such sequences
// evens out (measured on an H100: 180 us for one 2,048-token sequence, 1,772 for 16).
TEST(PagedAttention, UnevenCtasEndAfterTheirEvenShareUnlessManyEvenThemOut) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Predictor p(h100, policy("paged_attention=flash_v2"));
  const runtime::Prediction one = p.predict(paged({{2048, 2048}}, 0));
  const runtime::Prediction sixteen = p.predict(paged(std::vector<std::pair<std::uint64_t, std::uint64_t>>(16, {2048, 2048}), 0));
  EXPECT_GT(one.kernels[0].imbalance, 1.3);
  EXPECT_LT(sixteen.kernels[0].imbalance, 1.1);
  EXPECT_GT(one.time_s * 16, 1.2 * sixteen.time_s);
}

// Past a million CTAs the tail is not replayed (the waves are so many that it is a small part):
// a causal attention over 64 x 64 heads x 262,144 tokens (8.4 M CTAs) lowers at once.
TEST(PagedAttention, AGridOfManyMillionCtasIsNotReplayed) {
  const hw::Machine h100 = hw::Machine::load(config("h100_sxm5_80gb.json"));
  OpDesc op;
  op.kind = OpKind::attention;
  op.batch = 64;
  op.heads = op.kv_heads = 64;
  op.seq_q = op.seq_kv = 262144;
  op.head_dim = 128;
  op.causal = true;
  runtime::Predictor p(h100, policy("attention=flash_v2"));
  const runtime::Prediction r = p.predict(op);
  EXPECT_EQ(r.kernels[0].tiles, 64u * 64 * 2048);
  EXPECT_EQ(r.kernels[0].imbalance, 1.0);
}

TEST(PagedAttention, BadLengthsAreRefusedByName) {
  OpDesc op = paged({{4, 2}});  // more new tokens than context
  Diagnostics d;
  EXPECT_FALSE(runtime::validate_op(op, d, "row 3"));
  EXPECT_NE(d.to_string().find("sequence 0 has 4 query tokens and a context of 2"), std::string::npos) << d.to_string();
  op = paged({{1, 8}, {1, 8}});
  op.splits.pop_back();
  Diagnostics d2;
  EXPECT_FALSE(runtime::validate_op(op, d2, "row 4"));
  EXPECT_NE(d2.to_string().find("3 sequence lengths, expected 4"), std::string::npos) << d2.to_string();
}

}  // namespace
