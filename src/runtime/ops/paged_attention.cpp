// paged_attention: attention over a packed batch of sequences of different lengths whose keys and
// values live in pages of a KV pool, as a serving engine runs it every iteration (FlashAttention's
// varlen kernels with a block table, vLLM's paged attention): each sequence brings its new query
// tokens, which attend causally to its context (the tokens cached before them and themselves).
// A prefill chunk and a decode token are the same op with different query lengths, so a batch
// that mixes them (chunked prefill) is one kernel. OpDesc::splits holds the query lengths of the
// `batch` sequences followed by their context lengths (empty: seq_q and seq_kv split evenly).

#include <fmt/format.h>

#include <algorithm>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {
    {"batch", "sequences in the batch", &OpDesc::batch},
    {"heads", "attention query heads", &OpDesc::heads},
    {"kv_heads", "attention key/value heads (GQA/MQA)", &OpDesc::kv_heads},
    {"seq_q", "query tokens of all sequences (prefill chunks and decode tokens)", &OpDesc::seq_q},
    {"seq_kv", "context tokens of all sequences (cached and new)", &OpDesc::seq_kv},
    {"head_dim", "attention head size", &OpDesc::head_dim},
    {"page_tokens", "tokens per KV page (vLLM's block_size; 0: unpaged)", &OpDesc::page_tokens, nullptr, 1 << 20}};
constexpr std::string_view kImpls[] = {"auto", "flash_v2", "flash_v3"};

void check_paged(const OpDesc& op, OpCheck& c) {
  c.need(op.batch, "batch");
  c.need(op.heads, "heads");
  c.need(op.kv_heads, "kv-heads");
  c.need(op.seq_q, "seq-q");
  c.need(op.seq_kv, "seq-kv");
  c.need(op.head_dim, "head-dim");
  if (op.heads && op.kv_heads && op.heads % op.kv_heads != 0) {
    c.error(fmt::format("paged_attention: heads ({}) must be a multiple of kv-heads ({})", op.heads, op.kv_heads));
  }
  c.fits({op.seq_q, op.seq_kv, op.heads, op.head_dim, 4}, "the FLOP count");
  if (op.splits.empty()) {
    if (op.batch && (op.seq_q < op.batch || op.seq_q % op.batch != 0 || op.seq_kv % op.batch != 0)) {
      c.error(fmt::format("paged_attention: without per-sequence lengths, seq-q ({}) and seq-kv ({}) must split "
                          "evenly over {} sequences, each with at least one query token",
                          op.seq_q, op.seq_kv, op.batch));
    } else if (op.seq_q > op.seq_kv) {
      c.error(fmt::format("paged_attention: seq-q ({}) must be at most seq-kv ({}): the new tokens are part of the "
                          "context", op.seq_q, op.seq_kv));
    }
    return;
  }
  if (op.splits.size() != 2 * op.batch) {
    c.error(fmt::format("paged_attention: {} sequence lengths, expected {} (the query lengths of {} sequences, then "
                        "their context lengths)", op.splits.size(), 2 * op.batch, op.batch));
    return;
  }
  std::uint64_t q_sum = 0, kv_sum = 0;
  for (std::uint64_t i = 0; i < op.batch; ++i) {
    const std::uint64_t q = op.splits[i], kv = op.splits[op.batch + i];
    if (q == 0 || q > kv) {
      c.error(fmt::format("paged_attention: sequence {} has {} query tokens and a context of {}: expected at least one "
                          "query token and no more than its context", i, q, kv));
      return;
    }
    q_sum += q;
    kv_sum += kv;
  }
  if (q_sum != op.seq_q || kv_sum != op.seq_kv) {
    c.error(fmt::format("paged_attention: the sequences' lengths sum to {} query and {} context tokens, expected seq-q "
                        "{} and seq-kv {}", q_sum, kv_sum, op.seq_q, op.seq_kv));
  }
}

std::string describe_paged(const OpDesc& op) {
  std::string lengths;
  if (!op.splits.empty() && op.splits.size() == 2 * op.batch) {
    const auto q = std::minmax_element(op.splits.begin(), op.splits.begin() + static_cast<std::ptrdiff_t>(op.batch));
    const auto kv = std::minmax_element(op.splits.begin() + static_cast<std::ptrdiff_t>(op.batch), op.splits.end());
    lengths = fmt::format(" q/seq {}..{} kv/seq {}..{}", *q.first, *q.second, *kv.first, *kv.second);
  }
  return fmt::format("paged_attention seqs={} heads={} kv_heads={} seq_q={} seq_kv={} head_dim={}{}{} {}{}", op.batch,
                     op.heads, op.kv_heads, op.seq_q, op.seq_kv, op.head_dim,
                     op.page_tokens ? fmt::format(" page={}", op.page_tokens) : std::string(), lengths,
                     dtype_name(op.dtype), op.kv_dtype ? fmt::format(" kv {}", dtype_name(*op.kv_dtype)) : std::string());
}

// QK^T and AV over each sequence's pairs: its q new queries against the kv - q cached positions
// and, causally, each other.
double paged_flops(const OpDesc& op) {
  double pairs = 0;
  detail::for_each_sequence(op, [&](std::uint64_t q, std::uint64_t kv) {
    const double s_q = static_cast<double>(q);
    pairs += s_q * static_cast<double>(kv - q) + s_q * (s_q + 1) / 2;
  });
  return 4.0 * static_cast<double>(op.heads * op.head_dim) * pairs;
}

// Q and O once; each sequence's keys and values once per KV head, whole pages of them.
double paged_min_bytes(const OpDesc& op) {
  const double e = element_bytes(op.dtype);
  double kv_tokens = 0;
  detail::for_each_sequence(op, [&](std::uint64_t, std::uint64_t kv) {
    kv_tokens += static_cast<double>(op.page_tokens ? detail::ceil_div(kv, op.page_tokens) * op.page_tokens : kv);
  });
  return 2.0 * static_cast<double>(op.seq_q * op.heads * op.head_dim) * e +
         2.0 * kv_tokens * static_cast<double>(op.kv_heads * op.head_dim) * element_bytes(op.kv_dtype.value_or(op.dtype));
}
}  // namespace

extern constinit const OpType paged_attention_op{
    .kind = OpKind::paged_attention,
    .name = "paged_attention",
    .params = kParams,
    .implementations = kImpls,
    .splits_help = "the query lengths of the sequences, then their context lengths",
    .defaults = &attention_defaults,  // without kv_heads, one K/V head per query head
    .check = &check_paged,
    .describe = &describe_paged,
    .flops = &paged_flops,
    .min_bytes = &paged_min_bytes,
    .lower = &detail::lower_paged_attention,
};

}  // namespace syntorch::runtime::ops

namespace syntorch::runtime {

OpDesc paged_attention_desc(const PagedAttentionShape& shape, std::span<const std::int64_t> query_lens,
                            std::span<const std::int64_t> context_lens) {
  OpDesc o;
  o.kind = OpKind::paged_attention;
  o.dtype = shape.dtype;
  o.kv_dtype = shape.kv_dtype;
  o.heads = shape.heads;
  o.kv_heads = shape.kv_heads;
  o.head_dim = shape.head_dim;
  o.page_tokens = shape.page_tokens;
  o.batch = query_lens.size();
  o.splits.reserve(query_lens.size() + context_lens.size());
  for (std::int64_t q : query_lens) {
    o.seq_q += static_cast<std::uint64_t>(q);
    o.splits.push_back(static_cast<std::uint64_t>(q));
  }
  for (std::int64_t kv : context_lens) {
    o.seq_kv += static_cast<std::uint64_t>(kv);
    o.splits.push_back(static_cast<std::uint64_t>(kv));
  }
  return o;
}

}  // namespace syntorch::runtime
