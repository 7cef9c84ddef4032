// Attention. Fused FlashAttention-style kernels: one CTA per (batch, head, block of 128 queries)
// streams the K and V blocks through on-chip memory, so HBM sees Q, K, V and O once. A block of
// scores costs three kinds of work: the matrix products QK^T and PV (4 x head_dim FLOPs a score),
// one exponential a score on the special-function units (their own, much lower rate: 16 a clock
// per SM on Ampere and Hopper against thousands of matrix FLOPs), and a few fp32 vector
// operations (max, scaled subtraction, running sum, conversion of P). FlashAttention-2 runs the
// softmax between its two products, so the three add up, and it issues synchronous mma
// instructions, which on Hopper reach only part of the matrix rate (Shah et al., "FlashAttention-3",
// 2024, section 1: FlashAttention-2 reaches 35% of H100's peak); FlashAttention-3 needs Hopper's
// asynchronous wgmma/TMA and overlaps the softmax of one warpgroup with the products of the other
// (ping-pong scheduling, section 3.1), so the slower of the two bounds a block. Decode
// (few queries against a long KV cache) splits the KV sequence across CTAs (split-KV) so small
// batches still fill the device, and GQA/MQA let a CTA serve all query heads of one KV head.
// The unfused path runs QK^T, softmax and AV as three kernels with the scores in HBM.
// Dropout on the probabilities draws a random byte a score inside the fused kernels (Philox,
// regenerated in the backward) and is a kernel of its own over the probabilities when unfused.

#include <algorithm>
#include <cmath>
#include <span>
#include <fmt/format.h>

#include "../ops/op_type.hpp"
#include "kernels.hpp"

namespace syntorch::runtime::detail {

namespace {
constexpr std::uint64_t kBlockQ = 128;
constexpr std::uint64_t kBlockKv = 128;
constexpr std::uint64_t kDecodeQueries = 16;  // FlashAttention's decode path (flash-decoding) threshold
constexpr double kSoftmaxVectorOpsPerScore = 4;  // max, scaled subtraction, running sum, conversion of P
constexpr double kSoftwareExpOps = 4;            // an exponential on the vector units (range reduction, polynomial)
constexpr double kBackwardVectorOpsPerScore = 6;  // S - LSE, dP - D, times P, scaling, conversions of P and dS
// Dropout's mask, drawn in the kernel with Philox4x32-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011): a call is 10 rounds of two 32x32-bit multiplies (high and low
// halves) and four xors or key additions on a 4-word state, and gives 16 random bytes, one a score
// as FlashAttention draws them: 10 x 6 / 16, about 4 operations a score, then the comparison with
// the threshold, the select and the 1/(1-p) scaling. The backward draws the same mask again.
constexpr double kDropoutVectorOpsPerScore = 7;

// The query-block x key-block pairs a (non-decode) pass visits: all, or those at or below the
// diagonal when causal (the last q_blocks rows of a kv_blocks square).
double block_pairs(const OpDesc& op) {
  const double q_blocks = static_cast<double>(ceil_div(op.seq_q, kBlockQ));
  const double kv_blocks = static_cast<double>(ceil_div(op.seq_kv, kBlockKv));
  return op.causal ? q_blocks * (kv_blocks - q_blocks + (q_blocks + 1) / 2) : q_blocks * kv_blocks;
}

// What one CTA's blocks of scores cost: the matrix products (`matrix_ops_per_score` FLOPs each,
// at the synchronous-mma fraction for flash_v2 on a device built for asynchronous ones), one
// exponential a score on the special-function units (a software routine of a few FMAs without
// them), and `vector_ops_per_score` fp32 operations. v2 runs them in turn; v3 overlaps the softmax
// with the products: the slower bounds, and the part of the faster one its ping-pong does not hide
// (1 - async_softmax_overlap) adds to it.
struct BlockCost {
  double sync, mm_s, exp_s, vector_s, special, overlap;
  double softmax_s() const { return exp_s + vector_s; }
  double tile_s(bool v3) const {
    if (!v3) return mm_s + softmax_s();
    return std::max(mm_s, softmax_s()) + (1.0 - overlap) * std::min(mm_s, softmax_s());
  }
};
BlockCost block_cost(const hw::Device& d, double mm, double vec, double scores, double matrix_ops_per_score,
                     double vector_ops_per_score, bool v3, bool vector_products) {
  BlockCost c{};
  c.sync = !v3 && !vector_products && d.compute.async_matrix ? d.compute.sync_matrix_efficiency : 1.0;
  c.mm_s = matrix_ops_per_score * scores / (mm * c.sync);
  c.special = d.compute.special_ops_per_cycle * d.compute.clock_hz;
  c.exp_s = c.special > 0 ? scores / c.special : (vec > 0 ? kSoftwareExpOps * scores / vec : 0);
  c.vector_s = vec > 0 ? vector_ops_per_score * scores / vec : 0;
  c.overlap = d.compute.async_softmax_overlap;
  return c;
}

// The rate a fused kernel's products run at: the dtype's matrix units; for the memory-efficient
// kernel (PyTorch's choice for fp32, which FlashAttention does not take) the fp32 vector units
// where the dtype has no matrix units. FlashAttention itself needs them. The softmax's rate, the
// fp32 vector units', comes with it.
struct ProductRate {
  double ops_per_s;
  bool on_vector;
  double vector_ops_per_s;
};
ProductRate product_rate(const LowerContext& cx, bool memory_efficient) {
  const double mm = unit_matrix_ops_per_s(cx.device, cx.dtype);
  const double vec = unit_vector_ops_per_s(cx.device, DType::fp32);
  if (mm > 0) return {mm, false, vec};
  if (!memory_efficient || vec == 0) {
    unsupported(cx, fmt::format("FlashAttention needs {} matrix units (attention=mem_efficient runs {} products on "
                                "the vector units)", dtype_name(cx.dtype), dtype_name(cx.dtype)));
  }
  return {vec, true, vec};
}

// How many ways FlashAttention splits each sequence's keys (its num_splits heuristic, from the
// kernel's description in flash_api.cpp): none when the CTAs already fill most of the units
// (80%); else, of the split counts that change the key blocks per split, the smallest whose wave
// efficiency (CTAs over whole waves) is within 85% of the best, at most 128.
std::uint64_t split_kv_count(std::uint64_t ctas, std::uint64_t units, std::uint64_t key_blocks) {
  if (ctas == 0 || units == 0 || static_cast<double>(ctas) >= 0.8 * static_cast<double>(units)) return 1;
  const std::uint64_t most = std::min<std::uint64_t>({128, units, key_blocks});
  const auto efficiency = [&](std::uint64_t s) {
    const double waves = static_cast<double>(ctas * s) / static_cast<double>(units);
    return waves / std::ceil(waves);
  };
  // A split count whose blocks per split equal the next lower count's adds nothing.
  const auto eligible = [&](std::uint64_t s) { return s == 1 || ceil_div(key_blocks, s) != ceil_div(key_blocks, s - 1); };
  double best = 0;
  for (std::uint64_t s = 1; s <= most; ++s) {
    if (eligible(s)) best = std::max(best, efficiency(s));
  }
  for (std::uint64_t s = 1; s <= most; ++s) {
    if (eligible(s) && efficiency(s) >= 0.85 * best) return s;
  }
  return 1;
}

// FlashAttention-2's forward as PyTorch and vLLM ship it (flash_api.cpp), its grid as the
// profiler shows it on an H100 for head_dim 128. The standard kernel tiles 128 queries x 64 keys;
// the split-KV kernel 64 x 128, used when the keys are split or (vLLM) read through a block
// table. Every CTA computes its whole query tile, so a decode token alone in a tile pays for 128
// (64) rows. With a single query per sequence and GQA, the query heads of a KV head are swapped
// into the query rows (seqlenq_ngroups_swapped), so one CTA serves them all. The split count is
// its num_splits heuristic (split_kv_count) over the CTAs of 64-query blocks; the varlen entry
// splits only swapped batches. A CTA whose query tile lies past its sequence's end returns at
// once; causal tiles visit the key blocks up to their last query, aligned bottom-right. Each
// CTA holds a fixed share of its unit (4 warps at up to 255 registers: two fit a 64K-register
// file), so the order CTAs come in and their uneven sizes set the tail (list_schedule_imbalance).
constexpr std::uint64_t kFa2BlockM = 128, kFa2BlockN = 64;
constexpr std::uint64_t kFa2SplitBlockM = 64, kFa2SplitBlockN = 128;
constexpr std::uint32_t kFa2CtasPerUnit = 2;

struct Fa2Sequence {
  std::uint64_t q, kv;
};
enum class Fa2Entry : std::uint8_t { dense, varlen };

// What a forward leaves for the kernels around it: the split count and the query rows x heads
// for the combine kernel; for FlashAttention-2's swapped layout, the query elements copied into
// it and the output copied back (the reshapes of a transposed view, when KV heads > 1).
struct SplitRows {
  std::uint64_t splits = 1;
  double rows = 0;
  double swap_copy_elements = 0;
};

// The copies around a swapped FlashAttention-2 call: the queries into the swapped layout, then
// the output and its log-sum-exp back.
void add_swap_copies(std::vector<Kernel>& ks, const LowerContext& cx, double elements, double lse_rows) {
  if (elements <= 0) return;
  const double e = element_bytes(cx.dtype);
  Kernel in = stream_kernel(cx, {"", elements, e, e, 0});
  in.name = "flash_v2 queries into the swapped layout (copy)";
  ks.insert(ks.begin(), std::move(in));
  Kernel out = stream_kernel(cx, {"", elements, e, e, 0});
  out.name = "flash_v2 output back from the swapped layout (copy)";
  ks.push_back(std::move(out));
  Kernel lse = stream_kernel(cx, {"", lse_rows, 4, 4, 0});
  lse.name = "flash_v2 log-sum-exp back from the swapped layout (copy)";
  ks.push_back(std::move(lse));
}

// At most this many CTAs are replayed for the kernel's tail (list_schedule_imbalance); beyond,
// the waves are so many that the tail is a small part of the kernel, and none is counted.
constexpr std::uint64_t kMostReplayedCtas = 1 << 20;

// `seqs` repeated `repeat` times (a dense batch: one sequence, `batch` times).
Kernel flash_v2_forward(const OpDesc& op, const LowerContext& cx, std::span<const Fa2Sequence> seqs,
                        std::uint64_t repeat, Fa2Entry entry, bool causal, double extra_vector_ops,
                        SplitRows& split_rows) {
  const hw::Device& d = cx.device;
  const ProductRate rate = product_rate(cx, false);
  const std::uint64_t group = op.heads / op.kv_heads;
  std::uint64_t max_q = 0, max_kv = 0, queries = 0;
  for (const Fa2Sequence& s : seqs) {
    max_q = std::max(max_q, s.q);
    max_kv = std::max(max_kv, s.kv);
    queries += s.q * repeat;
  }
  const std::uint64_t sequences = seqs.size() * repeat;
  const bool swapped = max_q == 1 && group > 1 && !op.dropout;
  const std::uint64_t heads = swapped ? op.kv_heads : op.heads;
  const std::uint64_t max_rows = swapped ? group : max_q;
  std::uint64_t splits = 1;
  if (!op.dropout && (entry == Fa2Entry::dense || swapped)) {
    splits = split_kv_count(sequences * heads * ceil_div(max_rows, kFa2SplitBlockM), d.compute.units,
                            ceil_div(max_kv, kFa2SplitBlockN));
  }
  const bool split_kernel = splits > 1 || op.page_tokens > 0;
  const std::uint64_t block_m = split_kernel ? kFa2SplitBlockM : kFa2BlockM;
  const std::uint64_t block_n = split_kernel ? kFa2SplitBlockN : kFa2BlockN;
  const std::uint64_t per_split = ceil_div(ceil_div(max_kv, block_n), splits);
  // Score elements each CTA of one head of each sequence computes, query blocks fastest within
  // splits (a CTA whose split or query block lies past its sequence's end returns at once).
  std::vector<std::vector<double>> per_sequence(seqs.size());
  double scores = 0;
  std::uint64_t ctas = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Fa2Sequence& s = seqs[i];
    std::vector<double>& out = per_sequence[i];
    if (i > 0 && s.q == seqs[i - 1].q && s.kv == seqs[i - 1].kv) {
      out = per_sequence[i - 1];
    } else {
      const std::uint64_t rows = swapped ? group : s.q;
      for (std::uint64_t split = 0; split < splits; ++split) {
        const std::uint64_t first_block = split * per_split;
        for (std::uint64_t m = 0; m * block_m < rows; ++m) {
          const std::uint64_t last_query = std::min((m + 1) * block_m, rows);
          const std::uint64_t keys = causal && !swapped ? std::min(s.kv, s.kv - s.q + last_query) : s.kv;
          const std::uint64_t end_block = std::min(ceil_div(keys, block_n), first_block + per_split);
          if (end_block > first_block) out.push_back(static_cast<double>(block_m * (end_block - first_block) * block_n));
        }
      }
    }
    for (double w : out) scores += w * static_cast<double>(heads * repeat);
    ctas += out.size() * heads * repeat;
  }
  // Every CTA in dispatch order, for the tail: query blocks fastest, then splits, then heads and
  // sequences (split grid: sequence outermost; else head outermost).
  std::vector<double> work;
  if (ctas <= kMostReplayedCtas) {
    work.reserve(ctas);
    for (std::uint64_t r = 0; r < repeat; ++r) {
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        for (std::uint64_t h = 0; h < (splits > 1 ? heads : 1); ++h) {
          work.insert(work.end(), per_sequence[i].begin(), per_sequence[i].end());
        }
      }
    }
    if (splits == 1 && heads > 1) {  // head outermost: the sequences' CTAs again for each head
      const std::size_t one = work.size();
      for (std::uint64_t h = 1; h < heads; ++h) {
        work.insert(work.end(), work.begin(), work.begin() + static_cast<std::ptrdiff_t>(one));
      }
    }
  }
  if (splits > 1) {
    split_rows.splits = splits;
    split_rows.rows = static_cast<double>(queries * op.heads);
  }
  if (swapped && op.kv_heads > 1) split_rows.swap_copy_elements = static_cast<double>(queries * op.heads * op.head_dim);
  Kernel k;
  k.device = cx.device_index;
  k.impl = "flash_v2";
  k.tiles = std::max<std::uint64_t>(ctas, 1);
  k.tiles_per_unit = std::min(kFa2CtasPerUnit, std::max<std::uint32_t>(d.compute.resident_tiles_per_unit, 1));
  const BlockCost c = block_cost(d, rate.ops_per_s, rate.vector_ops_per_s, scores / static_cast<double>(k.tiles),
                                 4.0 * static_cast<double>(op.head_dim), kSoftmaxVectorOpsPerScore + extra_vector_ops,
                                 false, rate.on_vector);
  k.tile_compute_s = c.tile_s(false);
  k.imbalance = work.empty() ? 1.0 : list_schedule_imbalance(work, k, d);
  k.flops = op_flops(op);
  k.name = fmt::format("flash_v2 {}{}{} {}x{}", split_kernel ? "split-kv kernel" : "forward",
                       splits > 1 ? fmt::format(" {} splits", splits) : std::string(),
                       swapped ? ", GQA heads as rows" : "", block_m, block_n);
  k.why.push_back(fmt::format(
      "{} sequences, {} CTAs of {}x{} tiles ({:.0f} scores each on average, padded to whole tiles){}{}; {} per unit, "
      "the slowest unit {:.0f}% over an even share",
      sequences, ctas, block_m, block_n, scores / static_cast<double>(k.tiles),
      swapped ? fmt::format("; one query a sequence: its {} query heads per KV head as rows", group) : std::string(),
      splits > 1 ? fmt::format("; keys split {} ways so {} units fill", splits, d.compute.units) : std::string(),
      k.tiles_per_unit, (k.imbalance - 1) * 100));
  k.why.push_back(fmt::format("per CTA: matrix {:.2f} us (synchronous mma at {:.0f}% of the matrix rate), "
                              "exponentials {:.2f} us, other softmax{} {:.2f} us, in turn",
                              c.mm_s * 1e6, c.sync * 100, c.exp_s * 1e6,
                              op.dropout ? " and dropout's random mask" : "", c.vector_s * 1e6));
  return k;
}

Kernel fused(const OpDesc& op, const LowerContext& cx, bool v3, bool memory_efficient, SplitRows& around) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const double qo_bytes = 2.0 * static_cast<double>(op.batch * op.heads * op.seq_q * op.head_dim) * e;
  const double kv_bytes = 2.0 * static_cast<double>(op.batch * op.kv_heads * op.seq_kv * op.head_dim) *
                          element_bytes(op.kv_dtype.value_or(op.dtype));
  if (!v3 && !memory_efficient) {
    const Fa2Sequence seq{op.seq_q, op.seq_kv};
    Kernel k = flash_v2_forward(op, cx, std::span<const Fa2Sequence>(&seq, 1), op.batch, Fa2Entry::dense, op.causal,
                                op.dropout ? kDropoutVectorOpsPerScore : 0, around);
    k.hbm_bytes = qo_bytes + kv_bytes;
    k.hbm_write_bytes = qo_bytes / 2;
    k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
    k.saved_bytes = static_cast<double>(op.batch * op.heads * op.seq_q) * 4.0;
    k.flops = ops::attention_flops(op);
    return k;
  }
  const ProductRate rate = product_rate(cx, memory_efficient);
  const double mm = rate.ops_per_s;
  const double vec = rate.vector_ops_per_s;
  const std::uint64_t group = op.heads / op.kv_heads;
  // Decode: a few new queries against a longer KV cache. One CTA serves all query heads of a KV
  // head (GQA/MQA), so its rows are group x seq_q.
  const bool decode = op.seq_q <= kDecodeQueries && op.seq_kv > op.seq_q;
  Kernel k;
  k.device = cx.device_index;
  k.impl = memory_efficient ? "mem_efficient" : v3 ? "flash_v3" : "flash_v2";
  k.tiles_per_unit = 1;
  k.hbm_bytes = qo_bytes + kv_bytes;
  k.hbm_write_bytes = qo_bytes / 2;  // the output
  // Each query row's log-sum-exp (fp32), which the backward recomputes the scores with.
  k.saved_bytes = static_cast<double>(op.batch * op.heads * op.seq_q) * 4.0;
  k.flops = ops::attention_flops(op);  // QK^T and AV over the (causal: lower-triangle) pairs
  double scores_per_tile;  // score elements one tile computes (padded to blocks)
  if (decode) {
    // Split-KV when the grid alone leaves units idle (FlashAttention's heuristic).
    const std::uint64_t base = op.batch * op.kv_heads;
    const std::uint64_t splits = split_kv_count(base, d.compute.units, ceil_div(op.seq_kv, kBlockKv));
    around.splits = splits;
    around.rows = static_cast<double>(op.batch * op.heads * op.seq_q);
    k.tiles = base * splits;
    // Matrix instructions work on at least 16 rows; more rows go in 128-row blocks.
    const std::uint64_t rows = std::max<std::uint64_t>(16, group * op.seq_q);
    const std::uint64_t padded = rows <= kBlockQ ? rows : ceil_div(rows, kBlockQ) * kBlockQ;
    scores_per_tile = static_cast<double>(padded) * static_cast<double>(ceil_div(op.seq_kv, splits));
    k.tiles_per_unit = d.compute.resident_tiles_per_unit;
    k.name = fmt::format("{} decode split-kv {}", k.impl, splits);
    k.why.push_back(fmt::format("decode: {} queries x {} heads per KV head against {} keys; split-KV {} so {} CTAs "
                                "cover {} units", op.seq_q, group, op.seq_kv, splits, k.tiles, d.compute.units));
  } else {
    const std::uint64_t q_blocks = ceil_div(op.seq_q, kBlockQ);
    const std::uint64_t kv_blocks = ceil_div(op.seq_kv, kBlockKv);
    k.tiles = op.batch * op.heads * q_blocks;
    const double visited = block_pairs(op) / static_cast<double>(q_blocks);  // key blocks a query block visits
    scores_per_tile = static_cast<double>(kBlockQ * kBlockKv) * visited;
    k.name = fmt::format("{} prefill", k.impl);
    k.why.push_back(fmt::format("prefill: {} CTAs (batch x heads x {}-query blocks), {:.1f} of {} KV blocks each{}",
                                k.tiles, kBlockQ, visited, kv_blocks, op.causal ? " (causal)" : ""));
  }
  const BlockCost c = block_cost(d, mm, vec, scores_per_tile, 4.0 * static_cast<double>(op.head_dim),
                                 kSoftmaxVectorOpsPerScore + (op.dropout ? kDropoutVectorOpsPerScore : 0), v3,
                                 rate.on_vector);
  k.tile_compute_s = c.tile_s(v3);
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  const std::string parts =
      fmt::format("per CTA: matrix {:.2f} us{}, exponentials {:.2f} us ({}), other softmax{} {:.2f} us", c.mm_s * 1e6,
                  c.sync < 1 ? fmt::format(" (synchronous mma at {:.0f}% of the matrix rate)", c.sync * 100) : "",
                  c.exp_s * 1e6,
                  c.special > 0 ? fmt::format("{:g} a clock per unit on the special-function units",
                                              d.compute.special_ops_per_cycle)
                                : fmt::format("{:g} vector operations each: special_ops_per_cycle not given", kSoftwareExpOps),
                  op.dropout ? " and dropout's random mask" : "", c.vector_s * 1e6);
  if (v3) {
    k.why.push_back(fmt::format("flash_v3: softmax overlapped with the asynchronous matrix products: {}-bound, {:.0f}% "
                                "of the shorter {} hidden behind it; {}",
                                c.mm_s >= c.softmax_s() ? "matrix" : (c.exp_s >= c.vector_s ? "exponential" : "softmax"),
                                c.overlap * 100, c.mm_s >= c.softmax_s() ? "softmax" : "products", parts));
  } else {
    k.why.push_back(fmt::format("{}: softmax between the two matrix products of each block, the three in turn{}; {}",
                                k.impl, rate.on_vector ? std::string(", the products on the fp32 vector units")
                                                       : std::string(),
                                parts));
  }
  return k;
}
// The split partial outputs (fp32, with their log-sum-exp) merged into the output of `rows` query
// rows x heads: each split's read, rescaled and added, the output written once (FlashAttention's
// combine kernel after a split-KV pass).
Kernel split_combine(const LowerContext& cx, const std::string& impl, double rows, std::uint64_t head_dim,
                     std::uint64_t splits) {
  const double elements = rows * static_cast<double>(head_dim);
  Kernel combine = stream_kernel(cx, {"", elements, 4.0 * static_cast<double>(splits), element_bytes(cx.dtype),
                                      3.0 * static_cast<double>(splits)});
  combine.name = fmt::format("{} split-kv combine {}", impl, splits);
  combine.impl = impl;
  return combine;
}

// A fused forward, with its combine kernel when its decode path split the keys (and the layout
// copies around a swapped FlashAttention-2 call).
std::vector<Kernel> fused_kernels(const OpDesc& op, const LowerContext& cx, bool v3, bool memory_efficient = false) {
  SplitRows around;
  std::vector<Kernel> ks{fused(op, cx, v3, memory_efficient, around)};
  if (around.splits > 1) ks.push_back(split_combine(cx, ks[0].impl, around.rows, op.head_dim, around.splits));
  add_swap_copies(ks, cx, around.swap_copy_elements, static_cast<double>(op.batch * op.heads * op.seq_q));
  return ks;
}

// FlashAttention's backward, one CTA per (batch, head, block of 128 keys) visiting every query
// block that attends to it (those at or below the diagonal when causal): Q, dO and the saved
// log-sum-exp and D = rowsum(dO * O) of each query block stream through, the scores and P are
// recomputed (one exponential a score), and five products follow: dV += P^T dO, dP = dO V^T,
// dS = P (dP - D), dK += dS^T Q and dQ += dS K, the last added atomically to an fp32 dQ in L2.
// Three kernels: D, the main kernel, and dQ's conversion to the input dtype.
std::vector<Kernel> backward(const OpDesc& op, const LowerContext& cx, bool v3, bool memory_efficient = false) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const ProductRate rate = product_rate(cx, memory_efficient);
  const double mm = rate.ops_per_s;
  const double vec = rate.vector_ops_per_s;
  const std::string impl = memory_efficient ? "mem_efficient" : v3 ? "flash_v3" : "flash_v2";
  const double q_elems = static_cast<double>(op.batch * op.heads * op.seq_q * op.head_dim);
  const double kv_elems = static_cast<double>(op.batch * op.kv_heads * op.seq_kv * op.head_dim);
  const double lse_rows = static_cast<double>(op.batch * op.heads * op.seq_q);
  Kernel pre = stream_kernel(cx, {"", q_elems, 2.0 * e, 4.0 / static_cast<double>(op.head_dim), 0});
  pre.name = fmt::format("{} backward: D = rowsum(dO * O)", impl);
  Kernel k;
  k.device = cx.device_index;
  k.impl = impl;
  k.tiles_per_unit = 1;
  const std::uint64_t q_blocks = ceil_div(op.seq_q, kBlockQ);
  const std::uint64_t kv_blocks = ceil_div(op.seq_kv, kBlockKv);
  k.tiles = op.batch * op.heads * kv_blocks;
  // Query blocks a key block meets: the forward's block pairs spread over the key blocks.
  const double visited = block_pairs(op) / static_cast<double>(kv_blocks);
  const double scores_per_tile = static_cast<double>(kBlockQ * kBlockKv) * visited;
  // Q, dO, K, V read once (a head's query blocks are shared by its key-block CTAs through L2; K
  // and V in the cache's dtype); dK, dV written; dQ written in fp32 (its atomic additions land in
  // L2), the log-sum-exp and D read.
  const double kv_e = element_bytes(op.kv_dtype.value_or(op.dtype));
  k.hbm_bytes = 2.0 * q_elems * e + 2.0 * kv_elems * kv_e + 2.0 * kv_elems * e + q_elems * 4.0 + 8.0 * lse_rows;
  k.hbm_write_bytes = 2.0 * kv_elems * e + q_elems * 4.0;
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  k.flops = 2.5 * ops::attention_flops(op);
  const BlockCost c = block_cost(d, mm, vec, scores_per_tile, 10.0 * static_cast<double>(op.head_dim),
                                 kBackwardVectorOpsPerScore + (op.dropout ? kDropoutVectorOpsPerScore : 0), v3,
                                 rate.on_vector);
  k.tile_compute_s = c.tile_s(v3);
  k.name = fmt::format("{} backward", impl);
  k.why.push_back(fmt::format("backward: {} CTAs (batch x heads x {}-key blocks), {:.1f} of {} query blocks each{}; "
                              "five matrix products a block, the scores recomputed",
                              k.tiles, kBlockKv, visited, q_blocks, op.causal ? " (causal)" : ""));
  k.why.push_back(fmt::format("per CTA: matrix {:.2f} us{}, exponentials {:.2f} us, other{} {:.2f} us; {}",
                              c.mm_s * 1e6,
                              c.sync < 1 ? fmt::format(" (synchronous mma at {:.0f}% of the matrix rate)", c.sync * 100)
                                         : std::string(),
                              c.exp_s * 1e6, op.dropout ? " (dropout's mask drawn again included)" : "", c.vector_s * 1e6,
                              v3 ? "flash_v3 overlaps the softmax with the products"
                                 : impl + " runs them in turn"));
  Kernel post = stream_kernel(cx, {"", q_elems, 4.0, e, 0});
  post.name = fmt::format("{} backward: dQ to {}", impl, dtype_name(cx.dtype));
  std::vector<Kernel> ks{std::move(pre), std::move(k), std::move(post)};
  for (Kernel& kk : ks) kk.impl = impl;
  return ks;
}

// The policy's implementation, refused where it cannot run.
const std::string& checked_impl(const LowerContext& cx) {
  if (cx.policy.impl == "flash_v3" && !cx.device.compute.async_matrix) {
    unsupported(cx, "flash_v3 needs asynchronous matrix units (async_matrix: Hopper-class wgmma/TMA); use flash_v2");
  }
  return cx.policy.impl;
}

// What `auto` may choose from, as PyTorch's scaled_dot_product_attention dispatches: the fused
// kernels the device can run among the backends its switches leave (FlashAttention: flash_v2;
// cuDNN: its Hopper-class kernel, flash_v3, where the device has asynchronous matrix units, else
// flash_v2; memory-efficient), or, when the switches leave none of those but the math path, the
// unfused ops (which auto never takes otherwise).
struct AutoChoices {
  bool v2 = false, v3 = false, mem_efficient = false, unfused = false;
};
AutoChoices auto_choices(const OpDesc& op, const LowerContext& cx) {
  const hw::Device& d = cx.device;
  const std::uint8_t all = OpDesc::kSdpFlash | OpDesc::kSdpMemEfficient | OpDesc::kSdpMath | OpDesc::kSdpCudnn;
  const std::uint8_t allowed = op.sdp_backends == 0 ? all : op.sdp_backends;
  const bool flash_bit = allowed & OpDesc::kSdpFlash, efficient_bit = allowed & OpDesc::kSdpMemEfficient,
             math_bit = allowed & OpDesc::kSdpMath, cudnn_bit = allowed & OpDesc::kSdpCudnn;
  const bool matrix = unit_matrix_ops_per_s(d, cx.dtype) > 0;
  AutoChoices c;
  c.v2 = matrix && (flash_bit || (cudnn_bit && !d.compute.async_matrix));
  c.v3 = matrix && d.compute.async_matrix && (cudnn_bit || (flash_bit && op.sdp_backends == 0));
  // The memory-efficient kernel: PyTorch's choice where FlashAttention cannot run (no matrix
  // units for the dtype), or the one left.
  c.mem_efficient = efficient_bit && (!matrix || (!c.v2 && !c.v3));
  c.unfused = math_bit && op.sdp_backends != 0 && !c.v2 && !c.v3 && !c.mem_efficient;
  if (!c.v2 && !c.v3 && !c.mem_efficient && !c.unfused) {
    unsupported(cx, "no scaled_dot_product_attention backend the switches leave can run it (torch.backends.cuda: "
                    "enable_flash_sdp, enable_mem_efficient_sdp, enable_math_sdp, enable_cudnn_sdp)");
  }
  return c;
}
}  // namespace

// The unfused path's pieces (PyTorch's math path): batched products over every query head (K/V
// heads repeated for GQA) and a row-wise pass over the scores, each lowered as its own op on the
// automatic policy and named for what it computes.
struct UnfusedPart {
  OpDesc op;
  const char* name;
  double workspace_bytes = 0;  // memory held while the op runs (at its peak, beside what is saved)
  double saved_bytes = 0;      // memory left for the backward
};
OpDesc unfused_product(const OpDesc& op, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  OpDesc p{};
  p.kind = OpKind::bmm;
  p.dtype = op.dtype;
  p.batch = op.batch * op.heads;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}
OpDesc unfused_rows(const OpDesc& op, OpKind kind) {
  OpDesc r{};
  r.kind = kind;
  r.dtype = op.dtype;
  r.rows = op.batch * op.heads * op.seq_q;
  r.cols = op.seq_kv;
  return r;
}
// An elementwise pass over the probabilities: the dropout itself (output and a byte mask), or its
// backward (the gradient times the mask).
OpDesc unfused_elementwise(const OpDesc& op, OpKind kind) {
  OpDesc e{};
  e.kind = kind;
  e.dtype = op.dtype;
  e.elements = op.batch * op.heads * op.seq_q * op.seq_kv;
  return e;
}
std::vector<Kernel> lower_unfused(std::span<const UnfusedPart> parts, const LowerContext& cx) {
  const PolicyEntry automatic{};
  const LowerContext sub{cx.device, cx.device_index, automatic, cx.dtype};
  std::vector<Kernel> ks;
  for (const UnfusedPart& part : parts) {
    std::vector<Kernel> lowered = op_type(part.op.kind).lower(part.op, sub);
    lowered.front().workspace_bytes += part.workspace_bytes;
    lowered.front().saved_bytes += part.saved_bytes;
    for (Kernel& k : lowered) {
      k.name = k.tile.empty() ? part.name : fmt::format("{} {}", part.name, k.tile);
      k.impl = "unfused";  // what a policy names it by; the products' own kernels stay in the name
      ks.push_back(std::move(k));
    }
  }
  return ks;
}

// The backward of the unfused forward (autograd through its ops): dV = P^T dO, dP = dO V^T, the
// softmax's backward over the scores, dQ = dS K and dK = dS^T Q, four batched products and a
// row-wise pass through HBM, from the probabilities P the forward kept (Kernel::saved_bytes, which
// the torch layer allocates with the forward and frees with its backward). Under GQA the
// per-query-head dK and dV are summed over each group of heads.
std::vector<Kernel> unfused_backward(const OpDesc& op, const LowerContext& cx) {
  // dP and dS are s^2 each. Without dropout both are live beside the kept probabilities; under
  // dropout the dropped probabilities go after dV and the mask after dP is masked, so one more
  // s^2 at the peak than what was kept.
  const double scores_bytes = static_cast<double>(op.batch * op.heads * op.seq_q * op.seq_kv) * element_bytes(op.dtype);
  std::vector<UnfusedPart> parts = {
      {unfused_product(op, op.seq_kv, op.head_dim, op.seq_q), "attention backward dV = P^T dO"},
      {unfused_product(op, op.seq_q, op.seq_kv, op.head_dim), "attention backward dP = dO V^T", scores_bytes, 0}};
  if (op.dropout) parts.push_back({unfused_elementwise(op, OpKind::mul), "attention backward dropout"});
  parts.insert(parts.end(),
               {{unfused_rows(op, OpKind::softmax_backward), "attention backward softmax", op.dropout ? 0 : scores_bytes, 0},
                {unfused_product(op, op.seq_q, op.head_dim, op.seq_kv), "attention backward dQ = dS K"},
                {unfused_product(op, op.seq_kv, op.head_dim, op.seq_q), "attention backward dK = dS^T Q"}});
  if (op.kv_heads > 0 && op.heads > op.kv_heads) {
    OpDesc group{};
    group.kind = OpKind::sum;
    group.dtype = op.dtype;
    group.rows = 2 * op.batch * op.kv_heads * op.seq_kv * op.head_dim;  // dK and dV
    group.cols = op.heads / op.kv_heads;
    parts.push_back({group, "attention backward dK, dV summed over each head group"});
  }
  std::vector<Kernel> ks = lower_unfused(parts, cx);
  ks[0].why.insert(ks[0].why.begin(), fmt::format("unfused: the {}x{}x{} probabilities kept in HBM by the forward",
                                                  op.batch * op.heads, op.seq_q, op.seq_kv));
  return ks;
}

std::vector<Kernel> lower_attention_backward(const OpDesc& op, const LowerContext& cx) {
  const std::string& impl = checked_impl(cx);
  // auto chooses as the forward's auto does (a forward pinned by the policy pins its backward
  // too, unless the policy names the backward: KernelPolicy::set).
  const bool automatic = impl == "auto";
  const AutoChoices c = automatic ? auto_choices(op, cx) : AutoChoices{};
  std::vector<std::vector<Kernel>> options;
  if (impl == "flash_v2" || c.v2) options.push_back(backward(op, cx, false));
  if (impl == "flash_v3" || c.v3) options.push_back(backward(op, cx, true));
  if (impl == "mem_efficient" || c.mem_efficient) options.push_back(backward(op, cx, false, true));
  if (impl == "unfused" || c.unfused) options.push_back(unfused_backward(op, cx));
  return choose_implementation(std::move(options), cx);
}

// A packed batch of sequences over paged KV, one kernel as FlashAttention's varlen forward with a
// block table runs it (vLLM's FLASH_ATTN backend): each sequence of few queries (a decode token)
// gets one CTA per KV head serving its query heads, split along its context when the batch's
// CTAs alone do not cover the device; each longer one (a prefill chunk) one CTA per head and
// 128-query block visiting the key blocks at or below its diagonal, the chunk's queries sitting
// after its cached context. CTAs differ in work: the kernel's time is its total work over the
// units it fills, its traffic the packed Q and O and each sequence's pages of K and V.
namespace {
// The key blocks the 128-query blocks of a prefill chunk visit: q queries after kv - q cached
// positions, each block up to (causally) the key block of its last query, which need not be
// aligned with the key blocks.
double chunk_block_pairs(std::uint64_t q, std::uint64_t kv) {
  const std::uint64_t start = kv - q;
  double pairs = 0;
  for (std::uint64_t first = 0; first < q; first += kBlockQ) {
    const std::uint64_t last = start + std::min(first + kBlockQ, q) - 1;
    pairs += static_cast<double>(last / kBlockKv + 1);
  }
  return pairs;
}


Kernel paged(const OpDesc& op, const LowerContext& cx, bool v3, SplitRows& split_rows) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  if (!v3) {
    std::vector<Fa2Sequence> seqs;
    seqs.reserve(op.batch);
    double kv_tokens = 0;
    for_each_sequence(op, [&](std::uint64_t q, std::uint64_t kv) {
      seqs.push_back({q, kv});
      kv_tokens += static_cast<double>(op.page_tokens ? ceil_div(kv, op.page_tokens) * op.page_tokens : kv);
    });
    Kernel k = flash_v2_forward(op, cx, seqs, 1, Fa2Entry::varlen, true, 0, split_rows);
    const double qo_bytes = 2.0 * static_cast<double>(op.seq_q * op.heads * op.head_dim) * e;
    k.hbm_bytes = qo_bytes + 2.0 * kv_tokens * static_cast<double>(op.kv_heads * op.head_dim) *
                                 element_bytes(op.kv_dtype.value_or(op.dtype));
    k.hbm_write_bytes = qo_bytes / 2;
    k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
    k.name = "varlen " + k.name;
    if (op.page_tokens) {
      k.why.push_back(fmt::format("KV read through a block table in whole pages of {} tokens: {:.0f} tokens for {} in "
                                  "context", op.page_tokens, kv_tokens, op.seq_kv));
    }
    return k;
  }
  const ProductRate rate = product_rate(cx, false);
  const std::uint64_t group = op.heads / op.kv_heads;
  // First pass: CTAs without splitting, and the longest decode context.
  std::uint64_t base_tiles = 0, decode_seqs = 0, longest_decode = 0, prefill_seqs = 0;
  double kv_tokens = 0;
  for_each_sequence(op, [&](std::uint64_t q, std::uint64_t kv) {
    kv_tokens += static_cast<double>(op.page_tokens ? ceil_div(kv, op.page_tokens) * op.page_tokens : kv);
    if (q <= kDecodeQueries) {
      base_tiles += op.kv_heads;
      ++decode_seqs;
      longest_decode = std::max(longest_decode, kv);
    } else {
      base_tiles += op.heads * ceil_div(q, kBlockQ);
      ++prefill_seqs;
    }
  });
  // Split-KV for the decode sequences when the grid leaves units idle (FlashAttention's heuristic).
  const std::uint64_t splits =
      decode_seqs == 0 ? 1 : split_kv_count(base_tiles, d.compute.units, ceil_div(longest_decode, kBlockKv));
  std::uint64_t tiles = 0;
  double scores = 0;  // score elements all CTAs compute, padded to what their blocks hold
  for_each_sequence(op, [&](std::uint64_t q, std::uint64_t kv) {
    if (q <= kDecodeQueries) {
      const std::uint64_t rows = std::max<std::uint64_t>(16, group * q);
      const std::uint64_t padded = rows <= kBlockQ ? rows : ceil_div(rows, kBlockQ) * kBlockQ;
      const std::uint64_t seq_splits = std::min(splits, ceil_div(kv, kBlockKv));
      tiles += op.kv_heads * seq_splits;
      scores += static_cast<double>(op.kv_heads * seq_splits * padded) * static_cast<double>(ceil_div(kv, seq_splits));
      if (seq_splits > 1) split_rows.rows += static_cast<double>(q * op.heads);
    } else {
      tiles += op.heads * ceil_div(q, kBlockQ);
      scores += static_cast<double>(op.heads) * chunk_block_pairs(q, kv) * static_cast<double>(kBlockQ * kBlockKv);
    }
  });
  split_rows.splits = splits;
  Kernel k;
  k.device = cx.device_index;
  k.impl = v3 ? "flash_v3" : "flash_v2";
  k.tiles = tiles;
  // Decode CTAs are small: several share a unit, as in the decode path of `fused`.
  k.tiles_per_unit = prefill_seqs == 0 ? d.compute.resident_tiles_per_unit : 1;
  const double qo_bytes = 2.0 * static_cast<double>(op.seq_q * op.heads * op.head_dim) * e;
  k.hbm_bytes = qo_bytes + 2.0 * kv_tokens * static_cast<double>(op.kv_heads * op.head_dim) *
                               element_bytes(op.kv_dtype.value_or(op.dtype));
  k.hbm_write_bytes = qo_bytes / 2;
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(tiles);
  k.flops = op_flops(op);
  const BlockCost c = block_cost(d, rate.ops_per_s, rate.vector_ops_per_s, scores / static_cast<double>(tiles),
                                 4.0 * static_cast<double>(op.head_dim), kSoftmaxVectorOpsPerScore, v3, rate.on_vector);
  k.tile_compute_s = c.tile_s(v3);
  k.name = fmt::format("{} varlen paged {} decode + {} prefill{}", k.impl, decode_seqs, prefill_seqs,
                       splits > 1 ? fmt::format(" split-kv {}", splits) : std::string());
  k.why.push_back(fmt::format("{} sequences: {} decode ({} query heads per KV head{}), {} prefill chunks in {}-query "
                              "blocks; {} CTAs of {:.0f} scores on average",
                              op.batch, decode_seqs, group,
                              splits > 1 ? fmt::format(", contexts split {} ways to cover {} units", splits,
                                                       d.compute.units)
                                         : std::string(),
                              prefill_seqs, kBlockQ, tiles, scores / static_cast<double>(tiles)));
  if (op.page_tokens) {
    k.why.push_back(fmt::format("KV read in whole pages of {} tokens: {:.0f} tokens for {} in context", op.page_tokens,
                                kv_tokens, op.seq_kv));
  }
  return k;
}
}  // namespace

std::vector<Kernel> lower_paged_attention(const OpDesc& op, const LowerContext& cx) {
  const std::string& impl = checked_impl(cx);
  if (unit_matrix_ops_per_s(cx.device, cx.dtype) <= 0) {
    unsupported(cx, fmt::format("paged attention (FlashAttention varlen) needs {} matrix units", dtype_name(cx.dtype)));
  }
  // auto: FlashAttention-3 where the device has asynchronous matrix units (vLLM's choice on
  // Hopper), else FlashAttention-2.
  const bool v3 = impl == "flash_v3" || (impl == "auto" && cx.device.compute.async_matrix);
  SplitRows split;
  Kernel k = paged(op, cx, v3, split);
  k.why.insert(k.why.begin(), fmt::format("policy paged_attention={}: {}", impl,
                                          impl == "auto" ? (v3 ? "flash_v3 (asynchronous matrix units)"
                                                               : "flash_v2")
                                                         : "as requested"));
  std::vector<Kernel> ks{std::move(k)};
  if (split.splits > 1 && split.rows > 0) ks.push_back(split_combine(cx, ks[0].impl, split.rows, op.head_dim, split.splits));
  add_swap_copies(ks, cx, split.swap_copy_elements, static_cast<double>(op.seq_q * op.heads));
  return ks;
}

std::vector<Kernel> lower_attention(const OpDesc& op, const LowerContext& cx) {
  const hw::Device& d = cx.device;
  const std::string& impl = checked_impl(cx);
  std::vector<std::vector<Kernel>> options;
  // auto tries FlashAttention where the device has matrix units for the dtype, else the
  // memory-efficient kernel, as PyTorch's scaled_dot_product_attention dispatches (its math path,
  // unfused, only when asked for or left alone by the backend switches: auto_choices).
  const AutoChoices c = impl == "auto" ? auto_choices(op, cx) : AutoChoices{};
  if (impl == "flash_v2" || c.v2) options.push_back(fused_kernels(op, cx, false));
  if (impl == "flash_v3" || c.v3) options.push_back(fused_kernels(op, cx, true));
  if (impl == "mem_efficient" || c.mem_efficient) options.push_back(fused_kernels(op, cx, false, true));
  if (impl == "unfused" || c.unfused) {
    // QK^T per head (K/V heads repeated for GQA), softmax over the scores in HBM, then AV.
    // Memory at its peak, as autograd through the unfused ops holds it: the softmax's output (and
    // under dropout the mask and the dropped probabilities) kept for the backward (Korthikanti et
    // al. 2022, section 4: 5as^2b bytes a layer in 16 bits), and the scores beside the softmax's
    // output while it runs; under dropout the scores are gone before the mask and dropped
    // probabilities come, which are the larger peak.
    const double scores = static_cast<double>(op.batch * op.heads * op.seq_q * op.seq_kv);
    const double e = element_bytes(op.dtype);
    std::vector<UnfusedPart> parts = {
        {unfused_product(op, op.seq_q, op.seq_kv, op.head_dim), "attention QK^T", op.dropout ? 0 : scores * e, 0},
        {unfused_rows(op, OpKind::softmax), "attention softmax", 0, scores * e}};
    if (op.dropout) parts.push_back({unfused_elementwise(op, OpKind::dropout), "attention dropout", 0, scores * (1 + e)});
    parts.push_back({unfused_product(op, op.seq_q, op.head_dim, op.seq_kv), "attention AV"});
    std::vector<Kernel> ks = lower_unfused(parts, cx);
    ks[0].why.insert(ks[0].why.begin(), fmt::format("unfused: the {}x{}x{} score matrix goes through HBM{}",
                                                    op.batch * op.heads, op.seq_q, op.seq_kv,
                                                    op.causal ? "; the causal mask saves no work" : ""));
    options.push_back(std::move(ks));
  }
  std::size_t best = 0;
  std::vector<double> est(options.size(), 0);
  for (std::size_t i = 0; i < options.size(); ++i) {
    for (const auto& k : options[i]) est[i] += estimate_s(k, d);
    if (est[i] < est[best]) best = i;
  }
  auto chosen = std::move(options[best]);
  chosen[0].why.insert(chosen[0].why.begin(),
                       fmt::format("policy attention={}: {}", impl,
                                   options.size() > 1 ? fmt::format("fastest of {} implementations", options.size())
                                                      : std::string("as requested")));
  return chosen;
}

}  // namespace syntorch::runtime::detail
