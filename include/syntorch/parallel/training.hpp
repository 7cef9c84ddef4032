#pragma once
// Megatron-core's training step over the torch and parallel API: the pipeline schedules that run
// every micro-batch's forward and backward on a stage, activation checkpointing, and the
// mixed-precision optimizer (fp32 master weights and gradients, optionally sharded over data
// parallel: the distributed optimizer, ZeRO-1).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::parallel {

// GPipe: every micro-batch's forward, then every backward (Huang et al., 2019). 1F1B: after a
// warm-up of (pp - stage - 1) forwards, one forward and one backward in turn, so at most pp
// micro-batches' activations are alive on a stage (Narayanan et al., 2021, PipeDream-Flush).
// With virtual stages (vp model chunks per rank), 1F1B is interleaved as Megatron interleaves it
// (Narayanan et al., 2021, section 2.2): groups of pp micro-batches go through each chunk in turn,
// and the bubble shrinks by vp.
enum class PipelineSchedule : std::uint8_t { gpipe, one_f_one_b };

// One stage's forward of model chunk `chunk` (0 without interleaving; the parallel state's
// vp_rank is set to it) on micro-batch `mb`: the activation received from the previous virtual
// stage (undefined on the first) -> the stage's output (on the last virtual stage, the loss: a
// scalar).
using ForwardStep = std::function<torch::Tensor(int chunk, int mb, const torch::Tensor& input)>;

struct PipelineOptions {
  int micro_batches = 1;
  int virtual_stages = 1;  // model chunks per rank; > 1 interleaves (1F1B only; micro_batches a multiple of pp)
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  std::vector<std::int64_t> activation_shape;  // what neighbouring stages exchange
  torch::ScalarType activation_dtype = torch::kBFloat16;
  // Called before each micro-batch's backward with whether it is that model chunk's last in the
  // iteration (the one whose gradients the data-parallel reduction may start on as they come:
  // Megatron's no_sync for the others).
  std::function<void(int mb, bool last)> before_backward;
};

// Runs the forward and backward of every micro-batch of this rank's stage in the schedule's
// order. Activations go to the next stage and their gradients back by send/recv, which run on the
// rank's send and receive streams (a send once its tensor is produced, the compute stream
// waiting for a receive only where it uses it), so neither direction holds up the other.
// Scopes: "forward N", "backward N".
void forward_backward(const ForwardStep& forward, const PipelineOptions& options);

// Activation checkpointing (torch.utils.checkpoint, Megatron's recomputation): runs `f` on `xs`
// keeping nothing but its inputs; the backward runs f again with gradients recorded, then
// backpropagates through it. Parameters used by f receive their gradients then.
torch::Tensor checkpoint(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
                         const std::vector<torch::Tensor>& xs);
// ... of several outputs (torch.utils.checkpoint of a function returning a tuple; an undefined
// output is passed through).
std::vector<torch::Tensor> checkpoint_outputs(
    const std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>& f,
    const std::vector<torch::Tensor>& xs);
// ... of one input (a whole layer: Megatron's full recompute).
torch::Tensor checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& f, const torch::Tensor& x);

struct MixedPrecisionOptions {
  bool distributed = false;       // shard master weights, gradients' reduction and Adam over DP (ZeRO-1)
  double clip_grad = 1.0;         // global norm clipping (0: off)
  bool adam = true;               // Adam(W); false: SGD with momentum
  std::int64_t bucket_elements = 0;  // a DDP bucket's least size; 0: Megatron's, max(40M, 1M x dp)
  // Start each bucket's reduction, on a communication stream, as soon as the last micro-batch's
  // backward has produced all its gradients (Megatron's --overlap-grad-reduce); otherwise all
  // buckets are reduced at the step, on the compute stream.
  bool overlap_grad_reduce = false;
  // With distributed and overlap_grad_reduce (as Megatron requires): the step's all-gathers of the updated 16-bit weights run on the
  // communication stream, and each parallel layer's next forward waits only for its own bucket's
  // (Megatron-Core's --overlap-param-gather; parameter_sync.hpp). The step then ends once the
  // compute stream has, the gathers still under way.
  bool overlap_param_gather = false;
};

// Megatron's mixed-precision optimizer over this rank's parameters (16-bit): one contiguous fp32
// main-gradient buffer (gradients), fp32 master weights and the optimizer's state (optimizer
// state), sharded over the data-parallel group when distributed.
class MixedPrecisionOptimizer {
 public:
  MixedPrecisionOptimizer(std::vector<torch::Tensor> params, MixedPrecisionOptions options);
  ~MixedPrecisionOptimizer();
  MixedPrecisionOptimizer(const MixedPrecisionOptimizer&) = delete;
  MixedPrecisionOptimizer& operator=(const MixedPrecisionOptimizer&) = delete;

  // Before a micro-batch's backward (PipelineOptions::before_backward): whether it is the last
  // of its model chunk, whose gradients complete the buckets. Each parameter's 16-bit gradient is
  // added into its fp32 main gradient by a hook as soon as backward makes it (one add kernel,
  // Megatron's main_grad.add_), then dropped; with overlap_grad_reduce a bucket's reduction starts
  // when the last micro-batch has added its last parameter's. Without a call every backward counts
  // as the last (one micro-batch an iteration).
  void start_backward(bool last_micro_batch);
  // The step: main gradients reduced over DP in buckets (all-reduce; reduce-scatter when
  // distributed), their global norm (a multi-tensor norm, an all-reduce over the model-parallel
  // ranks, read by the host) and clipping, the optimizer on the fp32 master weights (this rank's
  // shard), the 16-bit weights refreshed (all-gathered when distributed), main gradients zeroed.
  void step();
  std::int64_t parameters() const { return numel_; }

 private:
  std::vector<torch::Tensor> params_;
  MixedPrecisionOptions options_;
  std::int64_t numel_ = 0;
  struct State;  // shared with the parameters' gradient hooks, which outlive nothing of it
  std::shared_ptr<State> state_;
};

}  // namespace syntorch::parallel
