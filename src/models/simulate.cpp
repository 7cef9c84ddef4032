#include "syntorch/models/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "syntorch/base/units.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::models {

namespace {
std::optional<torch::ScalarType> scalar_type(DType t) {
  switch (t) {
    case DType::fp32: return torch::kFloat32;
    case DType::fp16: return torch::kFloat16;
    case DType::bf16: return torch::kBFloat16;
    case DType::fp8: return torch::ScalarType::Float8_e4m3fn;
    default: return std::nullopt;
  }
}
}  // namespace

bool validate_run(const RunSpec& s, const hw::Machine& machine, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  auto positive = [&](std::int64_t v, const char* name) {
    if (v < 1) d.error(where, name, fmt::format("expected a positive integer, got {}", v));
  };
  positive(s.tp, "tp");
  positive(s.pp, "pp");
  positive(s.batch, "batch");
  positive(s.input_tokens, "input-tokens");
  positive(s.output_tokens, "output-tokens");
  if (d.size() != before) return false;
  const std::size_t devices = machine.devices().size();
  if (static_cast<std::size_t>(s.tp) * static_cast<std::size_t>(s.pp) > devices) {
    d.error(where, "tp", fmt::format("tp {} x pp {} needs {} devices; {} has {}", s.tp, s.pp, s.tp * s.pp,
                                     machine.config().file, devices));
  }
  if (s.model.heads % s.tp != 0) {
    d.error(where, "tp", fmt::format("{} has {} heads, which do not split over tp {}", s.model.name, s.model.heads, s.tp));
  }
  if (s.model.ffn % s.tp != 0) {
    d.error(where, "tp", fmt::format("{}'s MLP width {} does not split over tp {}", s.model.name, s.model.ffn, s.tp));
  }
  if (s.model.layers % s.pp != 0) {
    d.error(where, "pp", fmt::format("{} has {} layers, which do not split evenly over pp {}", s.model.name,
                                     s.model.layers, s.pp));
  }
  if (!scalar_type(s.dtype)) {
    d.error(where, "dtype", fmt::format("{} is not a dtype models run in (valid: fp32, fp16, bf16, fp8)", dtype_name(s.dtype)));
  }
  return d.size() == before;
}

RunReport simulate_generation(const hw::Machine& machine, const runtime::KernelPolicy& policy, const RunSpec& spec,
                              trace::Recorder* recorder, runtime::TraceLevel trace_level) {
  Diagnostics d;
  if (!validate_run(spec, machine, d, "run")) throw InputError(std::move(d));
  runtime::EngineOptions options;
  options.recorder = recorder;
  options.trace_level = trace_level;
  options.framework = spec.framework;
  runtime::Engine engine(machine, policy, spec.tp * spec.pp, options);
  const torch::ScalarType dtype = *scalar_type(spec.dtype);
  GenerateOptions generation;
  generation.batch = spec.batch;
  generation.input_tokens = spec.input_tokens;
  generation.output_tokens = spec.output_tokens;
  generation.micro_batches = spec.micro_batches;
  generation.graph = spec.graph;

  RunReport report;
  report.engine = engine.run([&](runtime::RankContext&) {
    torch::DefaultDtypeGuard dtype_guard(dtype);
    parallel::initialize_model_parallel(spec.tp, spec.pp);
    GPT model(spec.model);
    model->eval();
    generate(model, generation);
  });
  const runtime::EngineResult& r = report.engine;
  for (const auto& rank : r.ranks) {
    report.peak_memory_bytes.push_back(rank.memory.peak_allocated_bytes);
    report.peak_reserved_bytes.push_back(rank.memory.peak_reserved_bytes);
  }
  if (r.oom) {
    report.oom = true;
    return report;
  }
  const double e2e = units::ps_to_seconds(r.end_ps);
  report.e2e_s = e2e;
  // The first token is out when every rank has finished the prefill step.
  sim::TimePs prefill_end = 0;
  for (const auto& rank : r.ranks) {
    if (!rank.steps.empty()) prefill_end = std::max(prefill_end, rank.steps.front().end_ps);
  }
  report.ttft_s = units::ps_to_seconds(prefill_end);
  report.tpot_s = spec.output_tokens > 1 ? (e2e - report.ttft_s) / static_cast<double>(spec.output_tokens - 1) : 0;
  report.tokens_per_s = static_cast<double>(spec.batch * spec.output_tokens) / e2e;
  double flops = 0;
  double peak = 0;
  TimeBreakdown& b = report.breakdown;
  for (const auto& rank : r.ranks) {
    flops += rank.flops;
    peak += machine.devices()[rank.device].compute.peak_matrix_ops_per_s(spec.dtype);
    b.compute_s += units::ps_to_seconds(rank.compute_bound_ps);
    b.memory_s += units::ps_to_seconds(rank.memory_bound_ps);
    b.communication_s += units::ps_to_seconds(rank.communication_ps);
  }
  const double n = static_cast<double>(r.ranks.size());
  b.compute_s /= n;
  b.memory_s /= n;
  b.communication_s /= n;
  b.idle_s = std::max(0.0, e2e - b.compute_s - b.memory_s - b.communication_s);
  report.model_flops = flops;
  report.mfu = peak > 0 ? flops / (e2e * peak) : 0;
  return report;
}

}  // namespace syntorch::models
