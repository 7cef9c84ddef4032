#pragma once
// Reusing what a step's simulation found, for steps whose shape repeats. A step's forward takes
// its attention's time, which depends on every sequence's query and context lengths, plus the
// rest (the GEMMs, norms, collectives, the KV writes, the sampled tokens' way to the host), which
// depends only on the step's token count, the sequences it samples and whether a full CUDA graph
// runs it: the key. The first step of a key is simulated kernel by kernel and its rest kept (its
// time less its attention's, as the kernel model predicts that attention alone); a later step of
// the key takes that rest plus its own attention, predicted from its own lengths. Exact while the
// step's kernels run one after another on one stream, as a serving step's do.

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "syntorch/base/dtype.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/causal_lm.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::session::serving {

struct StepKey {
  std::int64_t tokens = 0;    // new tokens, padding included
  std::int64_t sampling = 0;  // rows sampled, padding included
  bool graph = false;         // a full CUDA graph replayed
  auto operator<=>(const StepKey&) const = default;
};

class StepReuse {
 public:
  StepReuse(const hw::Machine& machine, const runtime::KernelPolicy& policy, const models::AttentionShape& shape,
            DType dtype, DType kv_dtype, std::int64_t page_tokens);

  // The attention of all the rank's blocks over `batch`, seconds, as the kernel model predicts it.
  double attention_s(const models::PackedBatch& batch);
  // The rest of a step of `key`, when one was simulated.
  std::optional<double> rest_s(const StepKey& key) const;
  // A simulated step of `key` took `forward_s`, of which `attention_s` attention.
  void learn(const StepKey& key, double forward_s, double attention_s);

 private:
  runtime::Predictor predictor_;
  runtime::PagedAttentionShape shape_;
  double layers_;
  std::map<StepKey, double> rest_s_;
};

}  // namespace syntorch::session::serving
