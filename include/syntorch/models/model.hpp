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

// Activation recomputation (Korthikanti et al., 2022): none; selective (the attention core: only
// its inputs kept, its forward run again in backward, as Megatron-Core's checkpoint_core_attention
// does whichever attention kernel runs); full (each layer's input kept, the layer run again in
// backward).
enum class Recompute : std::uint8_t { none, selective, full };

struct TrainOptions {
  std::int64_t micro_batch = 1;      // sequences per micro-batch
  std::int64_t micro_batches = 1;    // per iteration on each data-parallel replica
  std::int64_t seq = 2048;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  bool one_f_one_b = true;           // else GPipe
  bool distributed_optimizer = false;
  bool overlap_grad_reduce = false;  // data-parallel reduction under the last backward
  bool overlap_param_gather = false; // the distributed optimizer's all-gather under the next forward
  bool adam = true;                  // else SGD with momentum
  int virtual_stages = 1;            // model chunks per pipeline rank (interleaved 1F1B)
  double hidden_dropout = 0.1;       // on the attention and MLP outputs (Megatron-LM's default)
  double attention_dropout = 0.1;    // on the attention probabilities (Megatron-LM's default)
  int iterations = 2;                // the first warms up (optimizer state, caches); scopes "iteration N"
  // Micro-batches of the warm-up iterations (0: micro_batches). 1F1B holds at most pp at once, so
  // pp of them bring the optimizer state and the allocator's cache to their steady state.
  std::int64_t warmup_micro_batches = 0;
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
  // The forward's matrix FLOPs per token of a sequence of `seq`, as Megatron counts model FLOPs
  // (Narayanan et al., 2021, appendix: every weight's GEMM, attention's QKᵀ and AV over the whole
  // sequence, the logits): a training step does three times this per token.
  virtual double forward_flops_per_token(std::int64_t seq) const = 0;

  // Problems with running this model at `layout` (heads over tp, layers over pp, tensors beyond
  // what the simulator can size), under `where` with the flag's name as the key.
  virtual void check(const RunLayout& layout, Diagnostics& diagnostics, const std::string& where) const = 0;

  // On the current rank (parallel state initialised): builds this rank's share in eval mode and
  // generates (autoregressive decoding with a KV cache, scopes "prefill" and "decode").
  virtual void generate(const GenerateOptions& options) const = 0;

  // Why this model cannot train on the simulator ("" when it can): checked before a run starts.
  virtual std::string training_refusal() const;
  // On the current rank: builds this rank's share in training mode and runs training iterations
  // (pipeline schedule, gradient reduction, mixed-precision optimizer step). Throws
  // std::invalid_argument with training_refusal() for a model that cannot train.
  virtual void train_iterations(const TrainOptions& options) const;
};

}  // namespace syntorch::models
