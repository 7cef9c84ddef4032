// attention: softmax(Q K^T) V per head, fused (FlashAttention v2/v3) or as three kernels
// (kernels/attention.cpp). Grouped-query attention shares each K/V head among heads/kv_heads
// query heads; a causal mask keeps the lower triangle of the scores.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

const OpParam kAttentionParams[8] = {{"batch", "batch size", &OpDesc::batch},
                                     {"heads", "attention query heads", &OpDesc::heads},
                                     {"kv_heads", "attention key/value heads (GQA/MQA)", &OpDesc::kv_heads},
                                     {"seq_q", "query length", &OpDesc::seq_q},
                                     {"seq_kv", "key/value length", &OpDesc::seq_kv},
                                     {"head_dim", "attention head size", &OpDesc::head_dim},
                                     {"causal", "causal attention mask", nullptr, &OpDesc::causal},
                                     {"dropout", "dropout on the attention probabilities", nullptr, &OpDesc::dropout}};

std::string describe_attention(const OpDesc& op) {
  return fmt::format("{} batch={} heads={} kv_heads={} seq_q={} seq_kv={} head_dim={}{}{} {}{}", op_name(op.kind),
                     op.batch, op.heads, op.kv_heads, op.seq_q, op.seq_kv, op.head_dim, op.causal ? " causal" : "",
                     op.dropout ? " dropout" : "",
                     dtype_name(op.dtype), op.kv_dtype ? fmt::format(" kv {}", dtype_name(*op.kv_dtype)) : std::string());
}

// Without kv_heads, multi-head attention: one K/V head per query head.
void attention_defaults(OpDesc& op) {
  if (op.kv_heads == 0) op.kv_heads = op.heads;
}

void check_attention(const OpDesc& op, OpCheck& c) {
  c.need(op.batch, "batch");
  c.need(op.heads, "heads");
  c.need(op.kv_heads, "kv-heads");
  c.need(op.seq_q, "seq-q");
  c.need(op.seq_kv, "seq-kv");
  c.need(op.head_dim, "head-dim");
  if (op.heads && op.kv_heads && op.heads % op.kv_heads != 0) {
    c.error(fmt::format("{}: heads ({}) must be a multiple of kv-heads ({})", op_name(op.kind), op.heads, op.kv_heads));
  }
  if (op.causal && op.seq_q > op.seq_kv) {
    c.error(fmt::format("{}: causal needs seq-q ({}) <= seq-kv ({})", op_name(op.kind), op.seq_q, op.seq_kv));
  }
  c.fits({op.batch, op.heads, op.seq_q, op.seq_kv, op.head_dim, 4}, "the FLOP count");
}

// QK^T and AV, each 2 x seq_q x seq_kv x head_dim per head; causal keeps the lower triangle
// (the last seq_q rows of a seq_kv x seq_kv mask).
double attention_flops(const OpDesc& op) {
  double pairs = static_cast<double>(op.seq_q) * static_cast<double>(op.seq_kv);
  if (op.causal) {
    const double s_q = static_cast<double>(op.seq_q);
    const double offset = static_cast<double>(op.seq_kv - op.seq_q);
    pairs = s_q * offset + s_q * (s_q + 1) / 2;
  }
  return 4.0 * static_cast<double>(op.batch * op.heads * op.head_dim) * pairs;
}

// Q and O once, K and V once per KV head.
double attention_min_bytes(const OpDesc& op) {
  const double e = element_bytes(op.dtype);
  const double kv_e = element_bytes(op.kv_dtype.value_or(op.dtype));
  return 2.0 * static_cast<double>(op.batch * op.heads * op.seq_q * op.head_dim) * e +
         2.0 * static_cast<double>(op.batch * op.kv_heads * op.seq_kv * op.head_dim) * kv_e;
}

namespace {
constexpr std::string_view kImpls[] = {"auto", "flash_v2", "flash_v3", "mem_efficient", "unfused"};
}  // namespace

extern constinit const OpType attention_op{
    .kind = OpKind::attention,
    .name = "attention",
    .params = kAttentionParams,
    .implementations = kImpls,
    .defaults = &attention_defaults,
    .check = &check_attention,
    .describe = &describe_attention,
    .flops = &attention_flops,
    .min_bytes = &attention_min_bytes,
    .lower = &detail::lower_attention,
};

}  // namespace syntorch::runtime::ops
