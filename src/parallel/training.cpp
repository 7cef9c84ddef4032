// Pipeline schedules, activation checkpointing and the mixed-precision optimizer.

#include "syntorch/parallel/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>

#include "syntorch/parallel/parameter_sync.hpp"
#include "syntorch/torch/autocast.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/optim.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::parallel {

void forward_backward(const ForwardStep& forward, const PipelineOptions& o) {
  const ParallelState& st = state();
  const int m = o.micro_batches;
  const int vp = o.virtual_stages;
  const int pp = st.pp_size;
  if (m < 1) throw std::invalid_argument("forward_backward: at least one micro-batch");
  if (vp < 1 || vp != st.vp_size) {
    throw std::invalid_argument(fmt::format("forward_backward: {} virtual stages, but the parallel state has {}", vp,
                                            st.vp_size));
  }
  if (vp > 1 && (o.schedule != PipelineSchedule::one_f_one_b || m % pp != 0 || pp < 3)) {
    throw std::invalid_argument(fmt::format("forward_backward: interleaving {} chunks needs 1F1B, at least 3 pipeline "
                                            "stages and micro-batches a multiple of them (got pp {}, {} micro-batches)",
                                            vp, pp, m));
  }
  // Inputs and outputs of each (chunk, micro-batch) until its backward: the last stage's loss,
  // elsewhere only the output's history, its memory freed once sent on (Megatron's
  // deallocate_output_tensor).
  const auto at = [m](int chunk, int mb) { return static_cast<std::size_t>(chunk * m + mb); };
  std::vector<torch::Tensor> inputs(static_cast<std::size_t>(m * vp)), losses(static_cast<std::size_t>(m * vp));
  std::vector<torch::autograd::Edge> sent(static_cast<std::size_t>(m * vp));
  // Sends and receives as NCCL's: the engine runs them on the rank's own send and receive streams
  // (a send once the compute stream has produced its tensor, the compute stream waiting for a
  // receive only where it uses it), so neither direction holds up the other.
  auto receive = [&](int peer) {
    torch::Tensor x = torch::empty(o.activation_shape, torch::TensorOptions(o.activation_dtype));
    recv(x, peer);
    return x;
  };
  // The k-th forward (backward) of the schedule: which chunk and micro-batch (Megatron's
  // get_model_chunk_id and microbatch id in its chunk).
  auto chunk_of = [&](int k, bool forward_pass) {
    const int c = (k % (pp * vp)) / pp;
    return forward_pass ? c : vp - c - 1;
  };
  auto micro_batch_of = [&](int k) { return vp == 1 ? k : (k / (pp * vp)) * pp + k % pp; };

  auto run_forward = [&](int k) {
    const int chunk = chunk_of(k, true), mb = micro_batch_of(k);
    set_virtual_pipeline_model_parallel_rank(chunk);
    torch::RecordScope scope(vp == 1 ? fmt::format("forward {}", mb) : fmt::format("forward {} chunk {}", mb, chunk));
    torch::Tensor x;
    if (!st.is_first_stage()) {
      x = receive(st.prev_stage_rank());
      x.requires_grad_(true);
    }
    torch::Tensor y = forward(chunk, mb, x);
    if (st.is_last_stage()) {
      losses[at(chunk, mb)] = y / static_cast<double>(m);  // averaged over micro-batches, as Megatron scales it
    } else {
      send(y, st.next_stage_rank());
      sent[at(chunk, mb)] = torch::autograd::edge_to(y);
    }
    inputs[at(chunk, mb)] = std::move(x);
  };
  auto run_backward = [&](int k) {
    const int chunk = chunk_of(k, false), mb = micro_batch_of(k);
    set_virtual_pipeline_model_parallel_rank(chunk);
    torch::RecordScope scope(vp == 1 ? fmt::format("backward {}", mb) : fmt::format("backward {} chunk {}", mb, chunk));
    if (o.before_backward) o.before_backward(mb, mb == m - 1);  // this chunk's last micro-batch
    if (st.is_last_stage()) {
      torch::autograd::backward({losses[at(chunk, mb)]});
      losses[at(chunk, mb)] = torch::Tensor();
    } else {
      torch::Tensor grad = receive(st.next_stage_rank());
      torch::autograd::backward({{std::move(sent[at(chunk, mb)]), std::move(grad)}});
    }
    torch::Tensor& x = inputs[at(chunk, mb)];
    if (!st.is_first_stage()) send(x.grad(), st.prev_stage_rank());
    x = torch::Tensor();
  };

  const int total = m * vp;
  int warmup;
  if (o.schedule == PipelineSchedule::gpipe) {
    warmup = total;
  } else if (vp == 1) {
    warmup = std::min(pp - st.pp_rank - 1, m);
  } else if (m == pp) {
    warmup = total;  // Megatron: every forward first when there are only pp micro-batches
  } else {
    warmup = std::min((pp - st.pp_rank - 1) * 2 + (vp - 1) * pp, total);
  }
  for (int k = 0; k < warmup; ++k) run_forward(k);
  for (int k = 0; k < total - warmup; ++k) {
    run_forward(k + warmup);
    run_backward(k);
  }
  for (int k = total - warmup; k < total; ++k) run_backward(k);
  set_virtual_pipeline_model_parallel_rank(0);
}

std::vector<torch::Tensor> checkpoint_outputs(
    const std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>& f,
    const std::vector<torch::Tensor>& xs) {
  if (!torch::autograd::GradMode::is_enabled()) return f(xs);
  std::vector<torch::Tensor> ys;
  {
    torch::autograd::NoGradGuard no_grad;
    ys = f(xs);
  }
  // Recorded even when no input needs a gradient: the parameters inside f may. The recomputation
  // runs in an autocast region of the forward's state, as torch.utils.checkpoint enters one (its
  // weight casts are dropped when it ends, unless an outer region holds them).
  std::vector<const torch::Tensor*> inputs;
  for (const torch::Tensor& x : xs) inputs.push_back(&x);
  std::vector<torch::Tensor*> outputs;
  for (torch::Tensor& y : ys) {
    if (y.defined()) outputs.push_back(&y);
  }
  torch::autograd::record("CheckpointFunctionBackward", inputs, outputs, xs,
                          [f, autocast = torch::autocast::state()](std::vector<torch::Tensor>& g,
                                                                   std::vector<torch::Tensor>& s,
                                                                   const torch::autograd::Node& n) {
                            std::vector<torch::Tensor> again;
                            for (std::size_t i = 0; i < s.size(); ++i) {
                              again.push_back(s[i].detach());
                              if (n.needs_input_grad(i)) again.back().requires_grad_(true);
                            }
                            std::vector<torch::Tensor> outs;
                            {
                              torch::autograd::AutoGradMode recording(true);
                              torch::autocast::AutocastMode forward_autocast(autocast.dtype, autocast.enabled,
                                                                             autocast.cache_enabled);
                              outs = f(again);
                            }
                            // The recomputed outputs that carry history and received a gradient.
                            std::vector<torch::Tensor> roots, grads_in;
                            std::size_t k = 0;
                            for (const torch::Tensor& o : outs) {
                              if (!o.defined()) continue;
                              if (k < g.size() && g[k].defined() && o.requires_grad()) {
                                roots.push_back(o);
                                grads_in.push_back(g[k]);
                              }
                              ++k;
                            }
                            if (!roots.empty()) torch::autograd::backward(roots, grads_in);
                            std::vector<torch::Tensor> grads;
                            for (std::size_t i = 0; i < again.size(); ++i) {
                              grads.push_back(n.needs_input_grad(i) ? again[i].grad() : torch::Tensor());
                            }
                            return grads;
                          });
  return ys;
}

torch::Tensor checkpoint(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
                         const std::vector<torch::Tensor>& xs) {
  return checkpoint_outputs([f](const std::vector<torch::Tensor>& in) { return std::vector<torch::Tensor>{f(in)}; },
                            xs)[0];
}

torch::Tensor checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& f, const torch::Tensor& x) {
  return checkpoint([f](const std::vector<torch::Tensor>& in) { return f(in[0]); }, std::vector<torch::Tensor>{x});
}

struct MixedPrecisionOptimizer::State {
  MixedPrecisionOptions options;
  std::vector<std::pair<std::int64_t, std::int64_t>> buckets;  // [offset, length) into main_grad
  std::vector<std::size_t> bucket_of;                          // each parameter's bucket
  std::vector<std::vector<torch::Tensor>> bucket_params;       // each bucket's parameters
  torch::Tensor main_grad;                                     // fp32, every parameter's
  std::vector<torch::Tensor> grad_views;                       // each parameter's slice of it
  std::vector<torch::Tensor> masters;    // fp32 master weights: this rank's share of each bucket
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // The last micro-batch's reduction, bucket by bucket.
  bool last_micro_batch = true;
  std::vector<std::size_t> waiting;      // parameters whose last gradient has not come yet (reset by each step)
  std::vector<torch::Tensor> reduced;    // each bucket's reduced gradient (its shard when distributed)
  std::vector<torch::cuda::Event> done;  // on the communication stream
  std::optional<torch::cuda::Stream> comm;

  // Every bucket waits for all its parameters' last gradients again.
  void reset_waiting() {
    waiting.clear();
    for (const auto& params : bucket_params) waiting.push_back(params.size());
  }
  torch::Tensor bucket(std::size_t b) const { return main_grad.narrow(0, buckets[b].first, buckets[b].second); }
  // Reduces bucket b over data parallel on the current stream.
  void reduce(std::size_t b) {
    const ParallelState& st = state();
    torch::Tensor g = bucket(b);
    if (options.distributed && st.dp_size > 1) {
      reduced[b] = reduce_scatter(g, st.dp_group, 0);
    } else {
      all_reduce(g, st.dp_group);
      reduced[b] = g;
    }
  }
  // A parameter's gradient has come: into its main gradient, and its bucket's reduction started
  // on the communication stream once it is the bucket's last of the last micro-batch.
  void gradient_ready(std::size_t i, torch::Tensor& param) {
    torch::Tensor& g = param.mutable_grad();
    if (!g.defined()) return;
    torch::_foreach_add_({grad_views[i]}, {g});
    g = torch::Tensor();
    const std::size_t b = bucket_of[i];
    if (!comm || !last_micro_batch || waiting[b] == 0 || --waiting[b] > 0) return;
    const torch::cuda::Event produced = torch::cuda::current_stream().record_event();
    torch::cuda::StreamGuard on(*comm);
    comm->wait_event(produced);
    reduce(b);
    done[b] = comm->record_event();
  }
};

MixedPrecisionOptimizer::MixedPrecisionOptimizer(std::vector<torch::Tensor> params, MixedPrecisionOptions options)
    : params_(std::move(params)), options_(options), state_(std::make_shared<State>()) {
  const ParallelState& st = state();
  State& s = *state_;
  if (options_.bucket_elements <= 0) options_.bucket_elements = std::max<std::int64_t>(40'000'000, 1'000'000LL * st.dp_size);
  s.options = options_;
  const int dp = options_.distributed ? st.dp_size : 1;
  // Buckets over the parameters in reverse order (the order backward produces their gradients),
  // each at least bucket_elements and padded to a multiple of dp.
  std::int64_t offset = 0, bucket_start = 0;
  std::vector<std::int64_t> offsets(params_.size());
  s.bucket_of.resize(params_.size());
  for (std::size_t k = params_.size(); k-- > 0;) {
    offsets[k] = offset;
    s.bucket_of[k] = s.buckets.size();
    offset += params_[k].numel();
    if (offset - bucket_start >= options_.bucket_elements || k == 0) {
      std::int64_t length = offset - bucket_start;
      length = (length + dp - 1) / dp * dp;
      s.buckets.emplace_back(bucket_start, length);
      offset = bucket_start + length;
      bucket_start = offset;
    }
  }
  s.bucket_params.resize(s.buckets.size());
  for (std::size_t i = 0; i < params_.size(); ++i) s.bucket_params[s.bucket_of[i]].push_back(params_[i]);
  s.reset_waiting();
  s.reduced.resize(s.buckets.size());
  s.done.resize(s.buckets.size());
  numel_ = 0;
  for (const torch::Tensor& p : params_) numel_ += p.numel();
  {
    torch::MemoryUseGuard use(torch::MemoryUse::gradients);
    s.main_grad = torch::zeros({std::max<std::int64_t>(offset, 1)}, torch::TensorOptions(torch::kFloat32));
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    s.grad_views.push_back(s.main_grad.narrow(0, offsets[i], params_[i].numel()).view(params_[i].sizes()));
  }
  {
    torch::MemoryUseGuard use(torch::MemoryUse::optimizer_state);
    for (const auto& [start, length] : s.buckets) {
      torch::Tensor master = torch::empty({length / dp}, torch::TensorOptions(torch::kFloat32));
      master.requires_grad_(true);
      s.masters.push_back(std::move(master));
    }
    // The master weights start as copies of the 16-bit ones (one foreach copy over the shards;
    // its bytes are counted at the shards' fp32 on both sides).
    torch::_foreach_copy_(s.masters, s.masters);
    if (options_.adam) {
      s.optimizer = std::make_unique<torch::optim::Adam>(s.masters, torch::optim::AdamOptions().fused(true));
    } else {
      s.optimizer = std::make_unique<torch::optim::SGD>(s.masters, torch::optim::SGDOptions(0.01).momentum(0.9).fused(true));
    }
  }
  if (options_.overlap_param_gather && (!options_.distributed || !options_.overlap_grad_reduce)) {
    throw std::invalid_argument(
        "overlap_param_gather overlaps the distributed optimizer's all-gather: as Megatron's, it needs distributed and "
        "overlap_grad_reduce");
  }
  if (options_.overlap_grad_reduce && st.dp_size > 1) s.comm.emplace();  // the gathers' too (they need it on)
  const std::weak_ptr<State> weak = state_;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    params_[i].register_post_accumulate_grad_hook([weak, i](torch::Tensor& p) {
      if (const std::shared_ptr<State> s = weak.lock()) s->gradient_ready(i, p);
    });
  }
}

MixedPrecisionOptimizer::~MixedPrecisionOptimizer() { forget_pending_parameters(params_); }

void MixedPrecisionOptimizer::start_backward(bool last_micro_batch) {
  state_->last_micro_batch = last_micro_batch;
}

void MixedPrecisionOptimizer::step() {
  torch::NoGradGuard no_grad;
  const ParallelState& st = state();
  State& s = *state_;
  torch::RecordScope scope("optimizer step");
  // Gradients reduced over data parallel, bucket by bucket (waiting for those already under way
  // on the communication stream); each master shard's gradient.
  std::vector<torch::Tensor> grads;
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    if (s.comm && s.done[b].recorded()) {
      torch::cuda::current_stream().wait_event(s.done[b]);
      s.done[b] = torch::cuda::Event();
    } else {
      s.reduce(b);
    }
    grads.push_back(std::move(s.reduced[b]));
    s.reduced[b] = torch::Tensor();
  }
  if (options_.clip_grad > 0) {
    // The global norm: each rank's part, summed over the model-parallel ranks (and the shards).
    // (Megatron reduces it over the model-parallel group at once; here over tp, then pp.)
    std::vector<torch::Tensor> norms = torch::_foreach_norm(grads);
    torch::Tensor total = torch::sum(torch::stack(norms));
    all_reduce(total, st.tp_group);
    all_reduce(total, st.pp_group);
    if (options_.distributed) all_reduce(total, st.dp_group);
    (void)total.item<float>();  // the host reads the norm
    torch::_foreach_mul_(grads, 1.0);
  }
  for (std::size_t b = 0; b < grads.size(); ++b) s.masters[b].mutable_grad() = grads[b];
  s.optimizer->step();
  for (torch::Tensor& m : s.masters) m.mutable_grad() = torch::Tensor();
  grads.clear();
  // The 16-bit weights from the master weights (gathered from the shards when distributed).
  if (options_.distributed && st.dp_size > 1 && options_.overlap_param_gather) {
    // Cast here, gathered on the communication stream in the order the forward uses them (the
    // last bucket holds the first layers); each bucket's parameters pending until its gather is in.
    std::vector<torch::Tensor> halves;
    for (const torch::Tensor& master : s.masters) halves.push_back(master.to(params_.front().dtype()));
    const torch::cuda::Event cast = torch::cuda::current_stream().record_event();
    torch::cuda::StreamGuard on(*s.comm);
    s.comm->wait_event(cast);
    for (std::size_t b = halves.size(); b-- > 0;) {
      (void)all_gather(halves[b], st.dp_group, 0);
      set_parameters_pending(s.bucket_params[b], s.comm->record_event());
    }
  } else if (options_.distributed && st.dp_size > 1) {
    for (const torch::Tensor& master : s.masters) {
      torch::Tensor half = master.to(params_.front().dtype());
      (void)all_gather(half, st.dp_group, 0);
    }
  } else {
    torch::_foreach_copy_(params_, params_);  // counted at the 16-bit weights' dtype on both sides
  }
  s.main_grad.zero_();
  s.reset_waiting();
}

}  // namespace syntorch::parallel
