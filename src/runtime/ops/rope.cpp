// rope: rotary position embedding (Su et al., "RoFormer", 2021) applied in place to the query
// and key heads of `tokens` tokens: the first rotary_dim dimensions of each head rotate pairwise
// by position-dependent angles (GPT-J rotates a part of each head, Llama all of it). Per rotated
// element in fp32: two multiplies and an add. Implementations: fused (one in-place kernel, as
// vLLM and TensorRT-LLM run it) and eager (Hugging Face's rotate_half composition):
// kernels/rope.cpp.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"tokens", "tokens (batch x sequence positions)", &OpDesc::rows},
                               {"heads", "attention query heads", &OpDesc::heads},
                               {"kv_heads", "attention key/value heads (GQA/MQA)", &OpDesc::kv_heads},
                               {"head_dim", "attention head size", &OpDesc::head_dim},
                               {"rotary_dim", "rotated dimensions of each head (rope)", &OpDesc::cols}};
constexpr std::string_view kImpls[] = {"auto", "fused", "eager"};

void check(const OpDesc& op, OpCheck& c) {
  c.need(op.rows, "tokens");
  c.need(op.heads, "heads");
  c.need(op.kv_heads, "kv-heads");
  c.need(op.head_dim, "head-dim");
  c.need(op.cols, "rotary-dim");
  if (op.cols > op.head_dim || op.cols % 2 != 0) {
    c.error(fmt::format("rope: rotary-dim ({}) must be even and at most head-dim ({})", op.cols, op.head_dim));
  }
  c.fits({op.rows, op.heads + op.kv_heads, op.head_dim, 4}, "tokens*heads*head_dim");
}

double rotated(const OpDesc& op) {
  return static_cast<double>(op.rows) * static_cast<double>(op.heads + op.kv_heads) * static_cast<double>(op.cols);
}
}  // namespace

extern constinit const OpType rope_op{
    .kind = OpKind::rope,
    .name = "rope",
    .params = kParams,
    .implementations = kImpls,
    .defaults =
        [](OpDesc& op) {
          if (op.kv_heads == 0) op.kv_heads = op.heads;
          if (op.cols == 0) op.cols = op.head_dim;
        },
    .check = &check,
    .describe =
        [](const OpDesc& op) {
          return fmt::format("rope tokens={} heads={} kv_heads={} head_dim={} rotary_dim={} {}", op.rows, op.heads,
                             op.kv_heads, op.head_dim, op.cols, dtype_name(op.dtype));
        },
    .flops = [](const OpDesc& op) { return 3.0 * rotated(op); },
    .min_bytes = [](const OpDesc& op) { return 2.0 * rotated(op) * element_bytes(op.dtype); },
    .lower = &detail::lower_rope,
};

}  // namespace syntorch::runtime::ops
