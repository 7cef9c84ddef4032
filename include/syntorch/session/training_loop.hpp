#pragma once
// The training driver: Megatron-LM's training iterations on this rank over a model's share. One
// chunk per virtual stage, the pipeline schedule's forwards and backwards of every micro-batch,
// the data-parallel gradient reduction and the mixed-precision optimizer step (scopes
// "iteration N"). Written only against the torch and parallel API, like a user's own loop.

#include <cstdint>

#include "syntorch/models/model.hpp"

namespace syntorch::session {

// What the iterations run: micro-batches and their size, the sequence, recomputation, the
// schedule, the optimizer and its overlaps, dropout, how many iterations and the warm-up's size.
struct TrainOptions {
  std::int64_t micro_batch = 1;      // sequences per micro-batch
  std::int64_t micro_batches = 1;    // per iteration on each data-parallel replica
  std::int64_t seq = 2048;
  bool sequence_parallel = false;
  models::Recompute recompute = models::Recompute::none;
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

// On the current rank (parallel state initialised): builds `model`'s chunks in training mode and
// runs the iterations. Throws std::invalid_argument for a model that cannot train.
void train_iterations(const models::Model& model, const TrainOptions& options);

}  // namespace syntorch::session
