#include "step_reuse.hpp"

namespace syntorch::session::serving {

StepReuse::StepReuse(const hw::Machine& machine, const runtime::KernelPolicy& policy,
                     const models::AttentionShape& shape, DType dtype, DType kv_dtype, std::int64_t page_tokens)
    : predictor_(machine, policy), layers_(static_cast<double>(shape.layers)) {
  // As torch::fused::paged_attention describes it.
  op_.kind = runtime::OpKind::paged_attention;
  op_.dtype = dtype;
  if (kv_dtype != dtype) op_.kv_dtype = kv_dtype;
  op_.heads = static_cast<std::uint64_t>(shape.heads);
  op_.kv_heads = static_cast<std::uint64_t>(shape.kv_heads);
  op_.head_dim = static_cast<std::uint64_t>(shape.head_dim);
  op_.page_tokens = static_cast<std::uint64_t>(page_tokens);
}

double StepReuse::attention_s(const models::PackedBatch& batch) {
  op_.batch = batch.query_lens.size();
  op_.seq_q = op_.seq_kv = 0;
  op_.splits.clear();
  for (std::int64_t q : batch.query_lens) {
    op_.seq_q += static_cast<std::uint64_t>(q);
    op_.splits.push_back(static_cast<std::uint64_t>(q));
  }
  for (std::int64_t kv : batch.context_lens) {
    op_.seq_kv += static_cast<std::uint64_t>(kv);
    op_.splits.push_back(static_cast<std::uint64_t>(kv));
  }
  return layers_ * predictor_.predict(op_, runtime::Timing::device).time_s;
}

std::optional<double> StepReuse::rest_s(const StepKey& key) const {
  const auto it = rest_s_.find(key);
  if (it == rest_s_.end()) return std::nullopt;
  return it->second;
}

void StepReuse::learn(const StepKey& key, double forward_s, double attention_s) {
  rest_s_.emplace(key, forward_s - attention_s);
}

}  // namespace syntorch::session::serving
