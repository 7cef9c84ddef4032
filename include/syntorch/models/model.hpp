#pragma once
// A model the zoo can run, as front ends see it: its name and size, the checks a run's layout
// and sizes must pass, and, on a rank whose parallel state is set, building that rank's share
// and generating. Models are written only against the torch and parallel API.

#include <cstdint>
#include <optional>
#include <string>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"

namespace syntorch::models {

struct GenerateOptions {
  std::int64_t batch = 1;
  std::int64_t input_tokens = 128;
  std::int64_t output_tokens = 16;  // the first comes from the prefill
  std::int64_t micro_batches = 0;   // pipeline micro-batches; 0 = one per stage
  bool graph = false;               // capture each decode step as one graph launch
  std::optional<DType> kv_cache_dtype;  // the KV cache's dtype (the default dtype when not given)
  double expert_skew = 0;               // mixture of experts: routing imbalance (0: balanced)
  // The most prompt tokens one prefill forward takes (TensorRT-LLM's max_num_tokens, vLLM's
  // max_num_batched_tokens): the prefill runs the batch in groups of sequences within it, each
  // writing its rows of the KV cache, so activations are sized by the group (0: all at once).
  std::int64_t max_num_tokens = 0;
};

// How a run lays a model out and what it asks of it.
struct RunLayout {
  int tp = 1;
  int pp = 1;
  std::int64_t batch = 1;
  std::int64_t tokens = 1;  // input + output positions
  int ep = 1;               // expert parallel, within the TP group
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const std::string& name() const = 0;
  virtual double parameters() const = 0;     // weights of the whole model
  virtual std::int64_t context() const = 0;  // the sequence length it was trained for

  // Problems with running this model at `layout` (heads over tp, layers over pp, tensors beyond
  // what the simulator can size), under `where` with the flag's name as the key.
  virtual void check(const RunLayout& layout, Diagnostics& diagnostics, const std::string& where) const = 0;

  // On the current rank (parallel state initialised): builds this rank's share in eval mode and
  // generates (autoregressive decoding with a KV cache, scopes "prefill" and "decode").
  virtual void generate(const GenerateOptions& options) const = 0;
};

}  // namespace syntorch::models
