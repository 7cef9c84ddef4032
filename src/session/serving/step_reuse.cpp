#include "step_reuse.hpp"

namespace syntorch::session::serving {

StepReuse::StepReuse(const hw::Machine& machine, const runtime::KernelPolicy& policy,
                     const models::AttentionShape& shape, DType dtype, DType kv_dtype, std::int64_t page_tokens)
    : predictor_(machine, policy), layers_(static_cast<double>(shape.layers)) {
  shape_.heads = static_cast<std::uint64_t>(shape.heads);
  shape_.kv_heads = static_cast<std::uint64_t>(shape.kv_heads);
  shape_.head_dim = static_cast<std::uint64_t>(shape.head_dim);
  shape_.page_tokens = static_cast<std::uint64_t>(page_tokens);
  shape_.dtype = dtype;
  if (kv_dtype != dtype) shape_.kv_dtype = kv_dtype;
}

double StepReuse::attention_s(const models::PackedBatch& batch) {
  // The op the torch layer launches for the batch (runtime::paged_attention_desc, the one
  // description of it), predicted alone for every layer.
  const runtime::OpDesc op = runtime::paged_attention_desc(shape_, batch.query_lens, batch.context_lens);
  return layers_ * predictor_.predict(op, runtime::Timing::device).time_s;
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
