#include "syntorch/session/training_loop.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "syntorch/models/causal_lm.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/parallel/training.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::session {

void train_iterations(const models::Model& built_from, const TrainOptions& o) {
  if (const std::string why = built_from.training_refusal(); !why.empty()) throw std::invalid_argument(why);
  const parallel::ParallelState& st = parallel::state();
  // One model chunk per virtual stage of this rank (one without interleaving).
  parallel::set_virtual_pipeline_model_parallel_size(o.virtual_stages);
  models::BuildOptions build;
  build.training = true;
  build.sequence_parallel = o.sequence_parallel;
  build.recompute = o.recompute;
  build.hidden_dropout = o.hidden_dropout;
  build.attention_dropout = o.attention_dropout;
  std::vector<std::shared_ptr<models::CausalLM>> chunks;
  std::vector<torch::Tensor> params;
  for (int v = 0; v < o.virtual_stages; ++v) {
    parallel::set_virtual_pipeline_model_parallel_rank(v);
    std::shared_ptr<models::CausalLM> chunk = built_from.build(build);
    for (torch::Tensor& p : chunk->parameters()) params.push_back(p);
    chunks.push_back(std::move(chunk));
  }
  parallel::MixedPrecisionOptions mp;
  mp.distributed = o.distributed_optimizer;
  mp.adam = o.adam;
  mp.overlap_grad_reduce = o.overlap_grad_reduce;
  mp.overlap_param_gather = o.overlap_param_gather;
  parallel::MixedPrecisionOptimizer optimizer(std::move(params), mp);
  const bool sp = o.sequence_parallel && st.tp_size > 1;
  parallel::PipelineOptions pipeline;
  pipeline.micro_batches = static_cast<int>(o.micro_batches);
  pipeline.virtual_stages = o.virtual_stages;
  pipeline.schedule = o.one_f_one_b ? parallel::PipelineSchedule::one_f_one_b : parallel::PipelineSchedule::gpipe;
  pipeline.activation_shape = {o.micro_batch, sp ? o.seq / st.tp_size : o.seq, chunks.front()->hidden_size()};
  pipeline.activation_dtype = torch::get_default_dtype();
  pipeline.before_backward = [&](int, bool last) { optimizer.start_backward(last); };
  const auto forward = [&](int chunk, int, const torch::Tensor& input) {
    models::CausalLM& model = *chunks[static_cast<std::size_t>(chunk)];
    torch::Tensor x = input;
    if (st.is_first_stage()) x = torch::empty({o.micro_batch, o.seq}, torch::kInt64);  // the token ids
    torch::Tensor out = model.forward_train(x);
    if (!st.is_last_stage()) return out;
    return model.loss(out, torch::empty({o.micro_batch, o.seq}, torch::kInt64));
  };
  for (int it = 0; it < o.iterations; ++it) {
    torch::RecordScope iteration(fmt::format("iteration {}", it));
    const bool warm_up = it + 1 < o.iterations && o.warmup_micro_batches > 0;
    pipeline.micro_batches = static_cast<int>(warm_up ? o.warmup_micro_batches : o.micro_batches);
    parallel::forward_backward(forward, pipeline);
    optimizer.step();
    // The iteration ends with its compute; with the parameter gather overlapped, the gathers of its
    // step run under the next iteration's forward, as in steady state.
    if (o.overlap_param_gather) {
      torch::cuda::current_stream().synchronize();
    } else {
      torch::cuda::synchronize();
    }
  }
}

}  // namespace syntorch::session
