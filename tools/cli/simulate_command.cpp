// `syntorch simulate --model M [--hw FILE] --tp N --pp N [--ep N --expert-skew S] --batch B --input-tokens I --output-tokens O
// [--dtype D] [--policy P] [--set path=value]... [--graph] [--trace FILE] [--json]`: one generation
// run of a model from the zoo; prints latency, throughput, memory, MFU and where the time went.
// A simulated out-of-memory prints what held the memory and exits 3.

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

namespace {


struct SimulateOptions {
  std::string model;
  std::string hw;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  double expert_skew = 0;
  std::int64_t batch = 1;
  std::int64_t input_tokens = 128;
  std::int64_t output_tokens = 16;
  std::int64_t micro_batches = 0;
  std::int64_t max_num_tokens = 0;
  std::string ranks = "all";
  std::string dtype = "fp16";
  std::string kv_dtype;  // "" = the run's default
  std::string policy;
  std::vector<std::string> sets;
  bool graph = false;
  std::string framework = "eager";
  TraceFlags trace;
  bool json = false;
};

std::string ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

void print_oom(std::ostream& out, const runtime::OomReport& oom, const session::RunSpec& spec) {
  const os::AllocatorStats& m = oom.memory;
  out << fmt::format("OUT OF MEMORY on rank {} ({}): {} requested for {}; the device has {}\n", oom.rank,
                     oom.device_name, size(oom.requested_bytes), oom.requested_for, size(m.capacity_bytes));
  out << fmt::format("  allocated {} in live tensors, reserved {} by the caching allocator\n", size(m.allocated_bytes),
                     size(m.reserved_bytes));
  print_oom_holders(out, oom);
  out << fmt::format("  {} weights alone are {} in {}; more tensor or pipeline parallel ranks (now tp {} x pp {}), a "
                     "smaller batch or shorter sequences, or devices with more memory would fit it\n",
                     spec.model->name(), size(static_cast<std::uint64_t>(spec.model->parameters() * dtype_bits(spec.dtype) / 8)),
                     dtype_name(spec.dtype), spec.tp, spec.pp);
}

nlohmann::ordered_json report_json(const session::RunReport& r, const session::RunSpec& spec, const hw::Machine& m) {
  nlohmann::ordered_json j;
  j["status"] = r.oom ? "oom" : "ok";
  j["model"] = spec.model->name();
  j["hw"] = m.config().file;
  j["tp"] = spec.tp;
  j["pp"] = spec.pp;
  j["ep"] = spec.ep;
  j["expert_skew"] = spec.expert_skew;
  j["max_num_tokens"] = spec.max_num_tokens;
  j["batch"] = spec.batch;
  j["input_tokens"] = spec.input_tokens;
  j["output_tokens"] = spec.output_tokens;
  j["dtype"] = std::string(dtype_name(spec.dtype));
  j["kv_dtype"] = std::string(dtype_name(session::kv_cache_dtype(spec)));
  j["graph"] = spec.graph;
  j["framework"] = spec.framework == runtime::Framework::native ? "native" : "eager";
  j["ranks"] = spec.mirror_ranks ? "one" : "all";
  j["ttft_ms"] = r.ttft_s * 1e3;
  j["tpot_ms"] = r.tpot_s * 1e3;
  j["e2e_ms"] = r.e2e_s * 1e3;
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["peak_reserved_bytes"] = r.peak_reserved_bytes;
  j["breakdown"] = {{"compute_ms", r.breakdown.compute_s * 1e3},
                    {"memory_ms", r.breakdown.memory_s * 1e3},
                    {"communication_ms", r.breakdown.communication_s * 1e3},
                    {"waiting_ms", r.breakdown.waiting_s * 1e3},
                    {"launch_idle_ms", r.breakdown.idle_s * 1e3},
                    {"p2p_overlapped_ms", r.breakdown.p2p_s * 1e3}};
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  j["kernels"] = kernels;
  if (r.engine.oom) j["oom"] = oom_json(*r.engine.oom);
  return j;
}

void print_report(std::ostream& out, const session::RunReport& r, const session::RunSpec& spec, const hw::Machine& m,
                  double wall_s) {
  const int devices = spec.tp * spec.pp;
  out << fmt::format("{} on {}: {} device{} (tp {} x pp {}{}), batch {}, {} input + {} output tokens, {}, {}\n",
                     spec.model->name(), m.name(), devices, devices == 1 ? "" : "s", spec.tp, spec.pp,
                     spec.ep > 1 || spec.expert_skew > 0
                         ? fmt::format(", experts over ep {}{}", spec.ep,
                                       spec.expert_skew > 0 ? fmt::format(", routing skew {}", spec.expert_skew) : "")
                         : "",
                     spec.batch,
                     spec.input_tokens, spec.output_tokens, dtype_name(spec.dtype),
                     fmt::format("{}{}", spec.framework == runtime::Framework::native ? "native runtime" : "PyTorch eager",
                                 spec.graph ? " + CUDA graphs" : ""));
  out << fmt::format("  time to first token     {}\n", ms(r.ttft_s));
  out << fmt::format("  time per output token   {}\n", std::isfinite(r.tpot_s) ? ms(r.tpot_s) : "n/a (one output token)");
  out << fmt::format("  end-to-end latency      {}\n", ms(r.e2e_s));
  out << fmt::format("  throughput              {:.1f} tokens/s ({:.1f} per device)\n", r.tokens_per_s,
                     r.tokens_per_s / (spec.tp * spec.pp));
  out << fmt::format("  model FLOPs utilisation {:.1f}%\n", r.mfu * 100);
  const auto [lo, hi] = std::minmax_element(r.peak_memory_bytes.begin(), r.peak_memory_bytes.end());
  const auto [rlo, rhi] = std::minmax_element(r.peak_reserved_bytes.begin(), r.peak_reserved_bytes.end());
  out << fmt::format("  peak memory per device  {}{} allocated, {}{} reserved, of {}\n", size(*lo),
                     *lo == *hi ? "" : " .. " + size(*hi), size(*rlo), *rlo == *rhi ? "" : " .. " + size(*rhi),
                     size(static_cast<std::uint64_t>(m.devices()[0].memory.size_bytes)));
  const session::TimeBreakdown& b = r.breakdown;
  auto line = [&](const char* what, double s) {
    out << fmt::format("    {:<24} {:>12}  {:5.1f}%\n", what, ms(s), r.e2e_s > 0 ? s / r.e2e_s * 100 : 0);
  };
  out << "  where the time went (mean per device)\n";
  line("compute-bound kernels", b.compute_s);
  line("memory-bound kernels", b.memory_s);
  line("communication", b.communication_s);
  line("waiting for peers", b.waiting_s);
  line("launch gaps and idle", b.idle_s);
  if (b.p2p_s > 0) {
    out << fmt::format("    {:<24} {:>12}  (pipeline sends and receives, on their own streams)\n", "overlapped p2p",
                       ms(b.p2p_s));
  }
  if (spec.input_tokens + spec.output_tokens - 1 > spec.model->context()) {
    out << fmt::format("  note: {} positions exceed {}'s trained context of {}; they cost the same to simulate\n",
                       spec.input_tokens + spec.output_tokens - 1, spec.model->name(), spec.model->context());
  }
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  out << fmt::format("  simulated {} kernels ({} events) in {:.2f} s\n", kernels, r.engine.events, wall_s);
}

int run_simulate(const SimulateOptions& o, Context& ctx) {
  Diagnostics d;
  session::RunSpec spec;
  spec.model = models::parse_model(o.model, d, "--model");
  if (auto t = parse_dtype(o.dtype)) {
    spec.dtype = *t;
  } else {
    d.error("--dtype", "", fmt::format("unknown dtype \"{}\"{} (valid: {})", o.dtype, did_you_mean(o.dtype, dtype_names()),
                                       join(dtype_names())));
  }
  if (!o.kv_dtype.empty()) {
    if (auto t = parse_dtype(o.kv_dtype)) {
      spec.kv_dtype = *t;
    } else {
      d.error("--kv-dtype", "", fmt::format("unknown dtype \"{}\"{} (valid: {})", o.kv_dtype,
                                            did_you_mean(o.kv_dtype, dtype_names()), join(dtype_names())));
    }
  }
  spec.tp = o.tp;
  spec.pp = o.pp;
  spec.ep = o.ep;
  spec.expert_skew = o.expert_skew;
  spec.batch = o.batch;
  spec.input_tokens = o.input_tokens;
  spec.output_tokens = o.output_tokens;
  spec.micro_batches = o.micro_batches;
  spec.max_num_tokens = o.max_num_tokens;
  if (o.ranks == "one" || o.ranks == "all") {
    spec.mirror_ranks = o.ranks == "one";
  } else {
    d.error("--ranks", "", fmt::format("expected one (rank 0's program, the others mirroring it) or all, got \"{}\"",
                                       o.ranks));
  }
  spec.graph = o.graph;
  spec.framework = o.framework == "native" ? runtime::Framework::native : runtime::Framework::eager;
  const runtime::KernelPolicy policy = runtime::KernelPolicy::load(o.policy, d, "--policy");
  const auto overrides = hw::parse_overrides(o.sets, d);
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  std::optional<hw::Machine> machine;
  try {
    machine = hw::Machine::load(hw_file, overrides);
  } catch (const InputError& e) {
    d.append(e.diagnostics());
  }
  if (d.empty()) {
    Diagnostics flags;
    if (!session::validate_run(spec, *machine, flags, "flags")) {
      for (const auto& x : flags.items()) d.error(x.path.empty() ? "flags" : "--" + x.path, "", x.message);
    }
  }
  if (!d.empty()) {
    ctx.err << d.to_string();
    return kExitBadInput;
  }
  trace::Recorder recorder;
  if (!open_trace(o.trace, recorder, ctx)) return kExitBadInput;
  const auto start = std::chrono::steady_clock::now();
  const session::RunReport report =
      session::simulate_generation(*machine, policy, spec, &recorder, trace_level(o.trace));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    ctx.out << report_json(report, spec, *machine).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (report.oom) {
    print_oom(ctx.out, *report.engine.oom, spec);
  } else {
    print_report(ctx.out, report, spec, *machine, wall_s);
  }
  if (!finish_trace(o.trace, recorder, ctx, o.json)) return kExitBadInput;
  return report.oom ? kExitOom : kExitOk;
}

}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* s = app.add_subcommand("simulate", "Simulate text generation with a model from the zoo");
  s->add_option("--model", o->model, "a zoo model (gpt3-175b, llama3-70b, mixtral-8x7b, ...), a custom shape (gpt:..., llama:...) or a Hugging Face config.json")->required();
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json)");
  s->add_option("--tp", o->tp, "Tensor parallel ranks")->capture_default_str();
  s->add_option("--pp", o->pp, "Pipeline parallel stages")->capture_default_str();
  s->add_option("--ep", o->ep, "Expert parallel ranks (mixture-of-experts models; divides --tp: experts spread "
                "over the tensor-parallel ranks, tokens exchanged by all-to-all)")->capture_default_str();
  s->add_option("--expert-skew", o->expert_skew, "Routing imbalance of a mixture of experts: a Zipf exponent over "
                "the experts (0: balanced; 1: expert i gets 1/(i+1) of the top share)")->capture_default_str();
  s->add_option("--batch", o->batch, "Sequences generated together")->capture_default_str();
  s->add_option("--input-tokens,--num_input_tokens", o->input_tokens, "Prompt length")->capture_default_str();
  s->add_option("--output-tokens,--num_output_tokens", o->output_tokens, "Tokens generated per sequence (the first by "
                "the prefill)")->capture_default_str();
  s->add_option("--micro-batches", o->micro_batches, "Pipeline micro-batches (default: one per stage)");
  s->add_option("--ranks", o->ranks, "all: every rank's program runs; one: tensor-parallel ranks run the same program, "
                "so rank 0's runs and the others mirror it, joining its collectives (the same times, 1/tp of the work; "
                "not with pp or ep)")->capture_default_str();
  s->add_option("--max-num-tokens", o->max_num_tokens, "Prompt tokens per prefill forward, as TensorRT-LLM's "
                "max_num_tokens: the prefill runs in groups of sequences within it (default 0: the whole batch at once)");
  s->add_option("--dtype", o->dtype,
                "Data type: fp16, bf16, fp32, or fp8 (fp8 Linear weights and GEMMs, fp16 activations, fp8 KV cache)")
      ->capture_default_str();
  s->add_option("--kv-dtype", o->kv_dtype, "KV cache data type: the activations' (default; fp8 for --dtype fp8) or fp8");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  s->add_option("--framework", o->framework,
                "eager: PyTorch eager (dispatch cost per op); native: a C++ runtime like FasterTransformer (launch "
                "calls only)")
      ->check(CLI::IsMember({"eager", "native"}))
      ->capture_default_str();
  s->add_flag("--graph", o->graph, "Capture each decode step as a CUDA graph (one launch per step)");
  add_trace_flags(*s, o->trace);
  s->add_flag("--json", o->json, "Print JSON");
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_simulate(*o, ctx); }; });
}

}  // namespace syntorch::cli
