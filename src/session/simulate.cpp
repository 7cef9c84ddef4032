#include "syntorch/session/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "syntorch/base/key_value.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/models/moe.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/session/generation_loop.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::session {

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
  if (!s.model) {
    d.error(where, "model", "no model given (e.g. gpt3-13b)");
    return false;
  }
  auto positive = [&](std::int64_t v, const char* name) {
    if (v < 1) d.error(where, name, fmt::format("expected a positive integer, got {}", v));
  };
  positive(s.tp, "tp");
  positive(s.pp, "pp");
  positive(s.ep, "ep");
  if (s.mirror_ranks && (s.pp > 1 || s.ep > 1)) {
    d.error(where, "ranks", fmt::format("one (rank 0's program for every rank) needs ranks that run the same program: "
                                        "pipeline stages (pp {}) and expert-parallel ranks (ep {}) differ; use all",
                                        s.pp, s.ep));
  }
  if (!(s.expert_skew >= 0) || s.expert_skew > models::kMaxExpertSkew) {
    d.error(where, "expert-skew",
            fmt::format("expected a Zipf exponent in [0, {}], got {}", models::kMaxExpertSkew, s.expert_skew));
  }
  positive(s.batch, "batch");
  positive(s.input_tokens, "input-tokens");
  positive(s.output_tokens, "output-tokens");
  if (s.max_num_tokens < 0) {
    d.error(where, "max-num-tokens",
            fmt::format("expected a positive integer (or 0: the whole prompt at once), got {}", s.max_num_tokens));
  } else if (s.max_num_tokens > 0 && s.max_num_tokens < s.input_tokens) {
    d.error(where, "max-num-tokens",
            fmt::format("{} tokens per prefill forward cannot hold one prompt of {} (a prompt is not split across "
                        "forwards); give at least the input tokens, or 0",
                        s.max_num_tokens, s.input_tokens));
  }
  if (s.micro_batches < 0) {
    d.error(where, "micro-batches", fmt::format("expected a positive integer (or 0: one per stage), got {}", s.micro_batches));
  }
  if (d.size() != before) return false;
  // Sizes that keep every tensor (the KV cache: batch x sequence x hidden) well inside 64 bits.
  constexpr std::int64_t kMaxBatch = 1 << 20, kMaxTokens = 1 << 24;
  if (s.batch > kMaxBatch) d.error(where, "batch", fmt::format("expected at most {}, got {}", kMaxBatch, s.batch));
  if (s.input_tokens > kMaxTokens) {
    d.error(where, "input-tokens", fmt::format("expected at most {}, got {}", kMaxTokens, s.input_tokens));
  }
  if (s.output_tokens > kMaxTokens) {
    d.error(where, "output-tokens", fmt::format("expected at most {}, got {}", kMaxTokens, s.output_tokens));
  }
  if (d.size() != before) return false;
  if (s.micro_batches > 0 && (s.micro_batches > s.batch || s.batch % s.micro_batches != 0)) {
    d.error(where, "micro-batches",
            fmt::format("{} micro-batches do not split a batch of {} evenly", s.micro_batches, s.batch));
  }
  const std::size_t devices = machine.devices().size();
  if (static_cast<std::size_t>(s.tp) * static_cast<std::size_t>(s.pp) > devices) {
    d.error(where, s.tp > 1 || s.pp == 1 ? "tp" : "pp",
            fmt::format("tp {} x pp {} needs {} devices; {} has {}", s.tp, s.pp, s.tp * s.pp, machine.config().file, devices));
  } else if (s.tp * s.pp > 1) {
    for (int r = 0; r < s.tp * s.pp; ++r) {
      const hw::Device& dev = machine.devices()[static_cast<std::size_t>(r)];
      if (!dev.collective) {
        d.error(where, s.tp > 1 ? "tp" : "pp",
                fmt::format("{} of {} has no collective component (its communication library), which tp {} x pp {} "
                            "needs",
                            dev.name, machine.config().file, s.tp, s.pp));
        break;
      }
    }
  }
  s.model->check({s.tp, s.pp, s.batch, s.input_tokens + s.output_tokens, s.ep}, d, where);
  if (!scalar_type(s.dtype)) {
    d.error(where, "dtype", fmt::format("{} is not a dtype models run in (valid: fp32, fp16, bf16, fp8)", dtype_name(s.dtype)));
  } else if (s.kv_dtype) {
    const DType act = activation_dtype(s.dtype);
    const bool sixteen = act == DType::fp16 || act == DType::bf16;
    if (*s.kv_dtype != act && !(*s.kv_dtype == DType::fp8 && sixteen)) {
      d.error(where, "kv-dtype",
              fmt::format("a {} KV cache in a {} run: expected the activations' dtype ({}){}", dtype_name(*s.kv_dtype),
                          dtype_name(s.dtype), dtype_name(act), sixteen ? " or fp8" : ""));
    }
  }
  return d.size() == before;
}

DType activation_dtype(DType dtype) { return dtype == DType::fp8 ? DType::fp16 : dtype; }

double utilisation_peak_ops_per_s(const hw::Device& device, DType dtype, const runtime::KernelPolicy& policy) {
  return device.compute.peak_ops_per_s(policy.entry(runtime::OpKind::gemm).precision.value_or(dtype));
}

DType kv_cache_dtype(const RunSpec& s) {
  if (s.kv_dtype) return *s.kv_dtype;
  return s.dtype == DType::fp8 ? DType::fp8 : s.dtype;
}

RunReport simulate_generation(const hw::Machine& machine, const runtime::KernelPolicy& policy, const RunSpec& spec,
                              trace::Recorder* recorder, runtime::TraceLevel trace_level) {
  Diagnostics d;
  if (!validate_run(spec, machine, d, "run")) throw InputError(std::move(d));
  runtime::EngineOptions options;
  options.recorder = recorder;
  options.trace_level = trace_level;
  options.framework = spec.framework;
  if (spec.mirror_ranks) options.mirror_of.assign(static_cast<std::size_t>(spec.tp * spec.pp), 0);
  runtime::Engine engine(machine, policy, spec.tp * spec.pp, options);
  GenerateOptions generation;
  generation.batch = spec.batch;
  generation.input_tokens = spec.input_tokens;
  generation.output_tokens = spec.output_tokens;
  generation.micro_batches = spec.micro_batches;
  generation.graph = spec.graph;
  generation.kv_cache_dtype = kv_cache_dtype(spec);
  generation.expert_skew = spec.expert_skew;
  generation.max_num_tokens = spec.max_num_tokens;

  RunReport report;
  // fp8 as TensorRT-LLM runs it on Hopper: fp8 Linear weights and GEMMs (inputs quantised to
  // fp8) and an fp8 KV cache; fp16 activations, embeddings, norms and attention.
  const bool fp8 = spec.dtype == DType::fp8;
  report.engine = engine.run([&](runtime::RankContext&) {
    torch::DefaultDtypeGuard dtype_guard(*scalar_type(activation_dtype(spec.dtype)));
    std::optional<torch::fp8::ModelInitGuard> fp8_weights;
    std::optional<torch::fp8::AutocastGuard> fp8_gemms;
    if (fp8) {
      fp8_weights.emplace();
      fp8_gemms.emplace();
    }
    parallel::initialize_model_parallel(spec.tp, spec.pp, spec.ep);
    generate(*spec.model, generation);
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
  // Generation starts when the first rank begins its prefill (building the model, which loads
  // weights, is not part of it); the first token is out when every rank has finished the prefill.
  sim::TimePs start = r.end_ps;
  sim::TimePs prefill_end = 0;
  for (const auto& rank : r.ranks) {
    if (rank.steps.empty()) continue;
    start = std::min(start, rank.steps.front().begin_ps);
    prefill_end = std::max(prefill_end, rank.steps.front().end_ps);
  }
  const double e2e = units::ps_to_seconds(r.end_ps - start);
  report.e2e_s = e2e;
  report.ttft_s = units::ps_to_seconds(prefill_end - start);
  report.tpot_s = spec.output_tokens > 1 ? (e2e - report.ttft_s) / static_cast<double>(spec.output_tokens - 1)
                                         : std::numeric_limits<double>::quiet_NaN();
  report.tokens_per_s = static_cast<double>(spec.batch * spec.output_tokens) / e2e;
  double flops = 0;
  double peak = 0;
  TimeBreakdown& b = report.breakdown;
  for (const auto& rank : r.ranks) {
    flops += rank.flops;
    peak += utilisation_peak_ops_per_s(machine.devices()[rank.device], spec.dtype, policy);
    b.compute_s += units::ps_to_seconds(rank.compute_bound_ps);
    b.memory_s += units::ps_to_seconds(rank.memory_bound_ps);
    b.communication_s += units::ps_to_seconds(rank.communication_ps);
    b.waiting_s += units::ps_to_seconds(rank.waiting_ps);
    b.p2p_s += units::ps_to_seconds(rank.p2p_ps);
  }
  const double n = static_cast<double>(r.ranks.size());
  b.compute_s /= n;
  b.memory_s /= n;
  b.communication_s /= n;
  b.waiting_s /= n;
  b.p2p_s /= n;
  b.idle_s = std::max(0.0, e2e - b.compute_s - b.memory_s - b.communication_s - b.waiting_s);
  report.model_flops = flops;
  report.mfu = peak > 0 ? flops / (e2e * peak) : 0;
  return report;
}

}  // namespace syntorch::session
