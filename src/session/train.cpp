#include "syntorch/session/train.hpp"

#include "syntorch/session/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "syntorch/base/key_value.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/session/training_loop.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::session {

std::int64_t global_batch(const TrainSpec& s) { return s.global_batch > 0 ? s.global_batch : s.micro_batch * s.dp; }

bool validate_train(const TrainSpec& s, const hw::Machine& machine, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  if (!s.model) {
    d.error(where, "model", "a model is required");
  } else if (const std::string why = s.model->training_refusal(); !why.empty()) {
    d.error(where, "model", why);
  }
  auto at_least = [&](std::int64_t v, std::int64_t least, const char* name) {
    if (v < least) d.error(where, name, fmt::format("expected an integer of at least {}, got {}", least, v));
  };
  at_least(s.tp, 1, "tp");
  at_least(s.pp, 1, "pp");
  at_least(s.dp, 1, "dp");
  at_least(s.vp, 1, "vp");
  at_least(s.micro_batch, 1, "micro_batch");
  at_least(s.seq, 1, "seq");
  at_least(s.global_batch, 0, "global_batch");  // 0: micro_batch x dp
  if (s.zero != 0 && s.zero != 1) d.error(where, "zero", fmt::format("expected 0 or 1, got {}", s.zero));
  if (s.overlap_param_gather && (s.zero != 1 || !s.overlap_grad_reduce)) {
    d.error(where, "overlap_param_gather",
            "overlaps the distributed optimizer's parameter all-gather with the next forward: as Megatron's, it needs "
            "the distributed optimizer (zero 1) and overlap_grad_reduce");
  }
  if (!(s.hidden_dropout >= 0 && s.hidden_dropout < 1)) {
    d.error(where, "hidden_dropout", fmt::format("expected a probability in [0, 1), got {}", s.hidden_dropout));
  }
  if (!(s.attention_dropout >= 0 && s.attention_dropout < 1)) {
    d.error(where, "attention_dropout", fmt::format("expected a probability in [0, 1), got {}", s.attention_dropout));
  }
  if (s.dtype != DType::bf16 && s.dtype != DType::fp16 && s.dtype != DType::fp32) {
    d.error(where, "dtype", fmt::format("expected bf16, fp16 or fp32 (training keeps fp32 master weights), got {}",
                                        dtype_name(s.dtype)));
  }
  if (d.size() != before) return false;  // the rest divides by these
  const std::int64_t batch = global_batch(s);
  if (batch % (s.micro_batch * s.dp) != 0) {
    d.error(where, "global_batch",
            fmt::format("a global batch of {} does not split into micro-batches of {} over dp {} (it must be a "
                        "multiple of {})",
                        batch, s.micro_batch, s.dp, s.micro_batch * s.dp));
  }
  if (s.vp > 1 && d.size() == before) {
    const std::int64_t m = batch / (s.micro_batch * s.dp);
    if (s.pp < 3) {
      d.error(where, "vp", fmt::format("interleaving (vp {}) needs at least 3 pipeline stages, got pp {}", s.vp, s.pp));
    } else if (m % s.pp != 0) {
      d.error(where, "vp", fmt::format("interleaving needs the {} micro-batches per replica to be a multiple of pp {}",
                                       m, s.pp));
    } else if (s.gpipe) {
      d.error(where, "vp", "interleaving is a 1F1B schedule; drop schedule=gpipe");
    }
  }
  if (s.sequence_parallel && s.tp > 1 && s.seq % s.tp != 0) {
    d.error(where, "seq", fmt::format("sequence parallelism splits the sequence over tp {}: seq {} does not divide",
                                      s.tp, s.seq));
  }
  const std::size_t world = static_cast<std::size_t>(s.tp) * static_cast<std::size_t>(s.pp) *
                            static_cast<std::size_t>(s.dp);
  const std::size_t devices = machine.devices().size();
  if (world > devices) {
    d.error(where, "dp", fmt::format("tp {} x pp {} x dp {} needs {} devices; {} has {}", s.tp, s.pp, s.dp, world,
                                     machine.config().file, devices));
  } else if (world > 1) {
    for (std::size_t r = 0; r < world; ++r) {
      if (!machine.devices()[r].collective) {
        d.error(where, "tp", fmt::format("{} of {} has no collective component (its communication library), which "
                                         "tp x pp x dp = {} needs",
                                         machine.devices()[r].name, machine.config().file, world));
        break;
      }
    }
  }
  for (int r : s.trace_ranks) {
    if (static_cast<std::size_t>(r) >= world) {
      d.error(where, "trace_ranks", fmt::format("rank {} is outside the run's {} ranks (0..{})", r, world, world - 1));
      break;
    }
  }
  // Interleaving splits the layers over pp x vp virtual stages. The model names a problem by the
  // generation run's keys; a training run's are micro_batch and seq.
  if (s.model && d.size() == before) {
    Diagnostics layout;
    s.model->check({s.tp, s.pp * s.vp, s.micro_batch, s.seq, 1}, layout, where);
    for (const Diagnostic& x : layout.items()) {
      const std::string key = x.path == "batch" ? "micro_batch" : x.path == "input-tokens" ? "seq" : x.path;
      d.error(x.where, key, x.message);
    }
    d.add_dropped(layout.dropped());
  }
  return d.size() == before;
}

TrainReport simulate_training(const hw::Machine& machine, const runtime::KernelPolicy& policy, TrainSpec spec,
                              trace::Recorder* recorder, runtime::TraceLevel trace_level) {
  Diagnostics d;
  if (!validate_train(spec, machine, d, "run")) throw InputError(std::move(d));
  const std::int64_t batch = global_batch(spec);  // the spec's, or its default
  runtime::EngineOptions options;
  options.recorder = recorder;
  options.trace_level = trace_level;
  const int world = spec.tp * spec.pp * spec.dp;
  options.trace_ranks = spec.trace_ranks;
  // Ranks are tensor-parallel innermost, then data parallel, then pipeline (Megatron's order).
  auto dp_rank = [&](int r) { return (r / spec.tp) % spec.dp; };
  int simulated_replicas = spec.dp;
  if (spec.mirror_replicas && spec.dp > 1) {
    std::vector<bool> simulated(static_cast<std::size_t>(spec.dp), false);
    simulated[0] = true;
    for (int r : spec.trace_ranks) simulated[static_cast<std::size_t>(dp_rank(r))] = true;
    simulated_replicas = static_cast<int>(std::count(simulated.begin(), simulated.end(), true));
    options.mirror_of.resize(static_cast<std::size_t>(world));
    for (int r = 0; r < world; ++r) {
      options.mirror_of[static_cast<std::size_t>(r)] =
          simulated[static_cast<std::size_t>(dp_rank(r))] ? r : r - spec.tp * dp_rank(r);
    }
  }
  runtime::Engine engine(machine, policy, world, options);
  TrainOptions train;
  train.micro_batch = spec.micro_batch;
  train.micro_batches = batch / (spec.micro_batch * spec.dp);
  // The warm-up iteration fills the pipeline once (interleaving needs a multiple of pp, which pp is).
  train.warmup_micro_batches = std::min<std::int64_t>(train.micro_batches, spec.pp);
  train.seq = spec.seq;
  train.sequence_parallel = spec.sequence_parallel;
  train.recompute = spec.recompute;
  train.one_f_one_b = !spec.gpipe;
  train.distributed_optimizer = spec.zero == 1;
  train.overlap_grad_reduce = spec.overlap_grad_reduce;
  train.overlap_param_gather = spec.overlap_param_gather;
  train.adam = spec.adam;
  train.virtual_stages = spec.vp;
  train.hidden_dropout = spec.hidden_dropout;
  train.attention_dropout = spec.attention_dropout;
  const torch::ScalarType dtype = torch::from_runtime_dtype(spec.dtype);
  TrainReport report;
  report.global_batch = batch;
  report.micro_batches = train.micro_batches;
  report.simulated_replicas = simulated_replicas;
  report.warmup_micro_batches = train.warmup_micro_batches;
  report.engine = engine.run([&](runtime::RankContext&) {
    torch::DefaultDtypeGuard dtype_guard(dtype);
    parallel::initialize_model_parallel(spec.tp, spec.pp);
    train_iterations(*spec.model, train);
  });
  const runtime::EngineResult& r = report.engine;
  // Per stage: its largest rank's peak, and that rank's peak by purpose.
  report.stages.resize(static_cast<std::size_t>(spec.pp));
  for (const auto& rank : r.ranks) {
    const int stage = rank.rank / (spec.tp * spec.dp);
    StageMemory& m = report.stages[static_cast<std::size_t>(stage)];
    m.stage = stage;
    if (rank.memory.peak_allocated_bytes >= m.peak_bytes) {
      m.peak_bytes = rank.memory.peak_allocated_bytes;
      m.peak_by_use = rank.memory.peak_allocated_by_use;
    }
  }
  if (r.oom) {
    report.oom = true;
    return report;
  }
  // Iterations end when every rank has finished theirs.
  sim::TimePs first_end = 0, last_end = 0;
  for (const auto& rank : r.ranks) {
    if (rank.steps.size() >= 2) {
      first_end = std::max(first_end, rank.steps[rank.steps.size() - 2].end_ps);
      last_end = std::max(last_end, rank.steps.back().end_ps);
    }
  }
  report.iteration_s = units::ps_to_seconds(last_end - first_end);
  const double tokens = static_cast<double>(batch) * static_cast<double>(spec.seq);
  report.tokens_per_s = report.iteration_s > 0 ? tokens / report.iteration_s : 0;
  report.model_flops = 3.0 * spec.model->forward_flops_per_token(spec.seq) * tokens;
  // What the measured iteration did: the counters at its end less those at the warm-up's end
  // (each iteration ends synchronised).
  double executed = 0, peak = 0, communication = 0, side = 0;
  for (const auto& rank : r.ranks) {
    peak += utilisation_peak_ops_per_s(machine.devices()[rank.device], spec.dtype, policy);
    if (rank.steps.size() < 2) continue;
    const runtime::ScopeTiming& before = rank.steps[rank.steps.size() - 2];
    const runtime::ScopeTiming& last = rank.steps.back();
    for (runtime::OpKind k : {runtime::OpKind::gemm, runtime::OpKind::bmm, runtime::OpKind::attention,
                              runtime::OpKind::attention_backward, runtime::OpKind::grouped_gemm}) {
      const auto i = static_cast<std::size_t>(k);
      executed += last.flops_by_op[i] - before.flops_by_op[i];
    }
    communication += units::ps_to_seconds(last.communication_ps - before.communication_ps);
    side += units::ps_to_seconds(last.side_communication_ps - before.side_communication_ps);
  }
  const double n = static_cast<double>(r.ranks.size());
  if (report.iteration_s > 0) {
    report.tflops_per_gpu = report.model_flops / report.iteration_s / n / 1e12;
    report.mfu = peak > 0 ? report.model_flops / (report.iteration_s * peak) : 0;
    report.hfu = peak > 0 ? executed / (report.iteration_s * peak) : 0;
  }
  report.exposed_communication_s = communication / n;
  report.overlapped_communication_s = side / n;
  const double m = static_cast<double>(train.micro_batches);
  // Interleaving runs each micro-batch through vp chunks of 1/vp the work: the bubble is 1/vp.
  report.bubble_fraction = spec.pp > 1 ? (spec.pp - 1.0) / (spec.vp * m + spec.pp - 1.0) : 0;
  return report;
}

}  // namespace syntorch::session
