// `syntorch serve --model M [--hw FILE] --tp N [--dtype D] [--engine vllm|sglang|trtllm] --rate R
// --requests N --input-len I --output-len O [--slo ttft=2s,tpot=100ms] [--trace FILE] [--json]`: a
// serving engine fed a stream of requests; prints what vllm bench serve prints (throughput, TTFT,
// TPOT, ITL and end-to-end latency, goodput), the KV pool, preemptions and the batch sizes. An
// engine that cannot start (no KV pool left for the longest request) or a device out of memory
// exits 3.

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "parameter_flags.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/workload.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

namespace {

namespace sv = session::serving;

struct ServeOptions {
  ParameterFlags params;  // sv::serving_parameters()
  std::string hw;
  std::string policy;
  std::vector<std::string> sets;
  TraceFlags trace;
  bool json = false;
};

void print_distribution(std::ostream& out, const char* name, const sv::Distribution& d) {
  out << fmt::format("  {:<5} mean {:>9.2f} ms  median {:>9.2f} ms  p90 {:>9.2f} ms  p99 {:>9.2f} ms\n", name,
                     d.mean * 1e3, d.median * 1e3, d.p90 * 1e3, d.p99 * 1e3);
}

void print_report(std::ostream& out, const sv::ServeReport& r, const sv::ServeSpec& spec, const hw::Machine& m,
                  double wall_s) {
  const sv::ServeMetrics& x = r.metrics;
  out << fmt::format("{} on {}: tp {}, {}, engine {}; {} requests\n", spec.model->name(), m.name(), spec.tp,
                     dtype_name(spec.dtype), spec.engine, spec.traffic.requests);
  out << fmt::format("  KV pool                 {} blocks, {} tokens ({:.2f} GB a device; weights {:.2f} GB, "
                     "activations {:.2f} GB)\n",
                     r.kv_blocks, r.kv_tokens, r.kv_pool_bytes / 1e9, r.weights_bytes / 1e9,
                     r.activation_peak_bytes / 1e9);
  out << fmt::format("  successful requests     {}\n", x.completed);
  out << fmt::format("  benchmark duration      {:.2f} s\n", x.duration_s);
  out << fmt::format("  total input tokens      {}\n", x.input_tokens);
  out << fmt::format("  total generated tokens  {}\n", x.output_tokens);
  out << fmt::format("  request throughput      {:.2f} req/s\n", x.request_throughput);
  out << fmt::format("  output token throughput {:.1f} tok/s\n", x.output_throughput);
  out << fmt::format("  total token throughput  {:.1f} tok/s\n", x.total_token_throughput);
  if (spec.slo.ttft_s > 0 || spec.slo.tpot_s > 0 || spec.slo.e2e_s > 0) {
    out << fmt::format("  goodput                 {:.2f} req/s ({} of {} requests met the SLOs)\n", x.goodput, x.good,
                       x.completed);
  }
  print_distribution(out, "TTFT", x.ttft_s);
  print_distribution(out, "TPOT", x.tpot_s);
  print_distribution(out, "ITL", x.itl_s);
  print_distribution(out, "E2EL", x.e2e_s);
  out << fmt::format("  preemptions             {}\n", x.preemptions);
  if (x.prefix_hit_tokens > 0) out << fmt::format("  prefix cache hits       {} tokens\n", x.prefix_hit_tokens);
  float kv_peak = 0;
  std::size_t reused = 0;
  for (const sv::StepSample& s : r.steps) {
    kv_peak = std::max(kv_peak, s.kv_used);
    reused += s.reused ? 1 : 0;
  }
  out << fmt::format("  steps                   {} ({} of them reused from a step of their shape; KV pool at most "
                     "{:.0f}% used)\n",
                     r.steps.size(), reused, kv_peak * 100);
  out << "  sequences per step     ";
  for (const auto& [low, n] : sv::batch_size_histogram(r.steps)) out << fmt::format(" {}+: {}", low, n);
  out << "\n";
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  out << fmt::format("  simulated {} kernels ({} events) in {:.2f} s\n", kernels, r.engine.events, wall_s);
}

int run_serve(const ServeOptions& o, Context& ctx) {
  Diagnostics d;
  sv::ServeSpec spec;
  apply_parameter_flags(sv::serving_parameters(), o.params, spec, d);
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  session::RunSetup setup = session::load_run_setup(hw_file, o.sets, o.policy, d, "--policy");
  if (d.empty()) {
    Diagnostics flags;
    if (!sv::validate_serve(spec, *setup.machine, flags, "flags")) {
      for (const auto& x : flags.items()) d.error(x.path.empty() ? "flags" : session::parameter_flag(x.path), "", x.message);
      d.add_dropped(flags.dropped());
    }
  }
  if (!d.empty()) {
    ctx.err << d.to_string();
    return kExitBadInput;
  }
  trace::Recorder recorder;
  if (!open_trace(o.trace, recorder, ctx)) return kExitBadInput;
  const auto start = std::chrono::steady_clock::now();
  const sv::ServeReport report = sv::serve(*setup.machine, setup.policy, spec, &recorder, trace_level(o.trace));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    ctx.out << sv::serve_report_json(report, spec, setup.machine->config().file)
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  } else if (report.oom) {
    ctx.out << fmt::format("OUT OF MEMORY: {}\n", report.oom_reason);
    if (report.engine.oom) print_oom_holders(ctx.out, *report.engine.oom);
  } else {
    print_report(ctx.out, report, spec, *setup.machine, wall_s);
  }
  if (!finish_trace(o.trace, recorder, ctx, o.json)) return kExitBadInput;
  return report.oom ? kExitOom : kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* s = app.add_subcommand("serve", "Simulate a serving engine under a stream of requests");
  add_parameter_flags(*s, sv::serving_parameters(), o->params);
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json)");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  add_trace_flags(*s, o->trace);
  s->add_flag("--json", o->json, "Print JSON");
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_serve(*o, ctx); }; });
}

}  // namespace syntorch::cli
