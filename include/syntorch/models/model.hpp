#pragma once
// A model the zoo can run, as front ends see it: its name and size, the checks a run's layout
// and sizes must pass, and, on a rank whose parallel state is set, building that rank's share.
// What runs on the share (generating, training iterations) is a session driver's, not the
// model's. Models are written only against the torch and parallel API.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"

namespace syntorch::models {

class CausalLM;

// Activation recomputation (Korthikanti et al., 2022): none; selective (the attention core: only
// its inputs kept, its forward run again in backward, as Megatron-Core's checkpoint_core_attention
// does whichever attention kernel runs); full (each layer's input kept, the layer run again in
// backward).
enum class Recompute : std::uint8_t { none, selective, full };

// How a rank's share is built: for generation (eval mode) or for training (dropout, recomputation).
struct BuildOptions {
  bool training = false;
  double expert_skew = 0;          // mixture of experts: routing imbalance (0: balanced)
  bool sequence_parallel = false;  // training: activations between TP regions sharded along the sequence
  Recompute recompute = Recompute::none;
  double hidden_dropout = 0;       // training: on the attention and MLP outputs
  double attention_dropout = 0;    // training: on the attention probabilities
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

  // Why this model cannot train on the simulator ("" when it can): checked before a run starts.
  virtual std::string training_refusal() const;
  // On the current rank (parallel state initialised; under interleaving, the virtual stage set):
  // builds this rank's share, in training mode or eval mode as `options` say. Throws
  // std::invalid_argument with training_refusal() when asked to train a model that cannot.
  virtual std::shared_ptr<CausalLM> build(const BuildOptions& options) const = 0;
};

}  // namespace syntorch::models
