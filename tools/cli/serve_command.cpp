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
#include "svg_chart.hpp"
#include "syntorch/session/serving/capacity.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/trace/output_file.hpp"
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
  bool capacity = false;  // search the highest rate that meets the SLOs
  int probes = sv::kDefaultProbes;
  std::string chart;      // an SVG of p99 TTFT and TPOT against the rate
};

void print_distribution(std::ostream& out, const char* name, const sv::Distribution& d) {
  out << fmt::format("  {:<5} mean {:>9.2f} ms  median {:>9.2f} ms  p90 {:>9.2f} ms  p99 {:>9.2f} ms\n", name,
                     d.mean * 1e3, d.median * 1e3, d.p90 * 1e3, d.p99 * 1e3);
}

void print_report(std::ostream& out, const sv::ServeReport& r, const sv::ServeSpec& spec, const hw::Machine& m,
                  double wall_s) {
  const sv::ServeMetrics& x = r.metrics;
  out << fmt::format("{} on {}: {}tp {}, {}, engine {}; {} requests{}\n", spec.model->name(), m.name(),
                     spec.replicas > 1 || spec.prefill_replicas > 0
                         ? fmt::format("{}{} replicas ({}), ",
                                       spec.prefill_replicas > 0 ? fmt::format("{} prefill and ", spec.prefill_replicas)
                                                                 : std::string(),
                                       spec.replicas, sv::router_policy_names().at(static_cast<std::size_t>(spec.router)))
                         : std::string(),
                     spec.tp, dtype_name(spec.dtype), spec.engine, x.completed,
                     spec.traffic.requests_file.empty() ? "" : " from " + spec.traffic.requests_file);
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
  if (x.proposed_tokens > 0) {
    out << fmt::format("  speculative tokens      {} proposed, {} accepted ({:.1f}%)\n", x.proposed_tokens, x.accepted_tokens,
                       100.0 * static_cast<double>(x.accepted_tokens) / static_cast<double>(x.proposed_tokens));
  }
  float kv_peak = 0;
  std::size_t reused = 0;
  for (const sv::StepSample& s : r.steps) {
    kv_peak = std::max(kv_peak, s.kv_used);
    reused += s.reused ? 1 : 0;
  }
  out << fmt::format("  steps                   {} ({} of them reused from a step of their shape; KV pool at most "
                     "{:.0f}% used)\n",
                     r.steps.size(), reused, kv_peak * 100);
  for (std::size_t i = 0; r.replicas.size() > 1 && i < r.replicas.size(); ++i) {
    const sv::ReplicaSummary& y = r.replicas[i];
    out << fmt::format("  {:<23} {} requests, {} output tokens, {} steps, {} preemptions, KV pool at most {:.0f}% used\n",
                       fmt::format("{} {}", y.role, i), y.requests, y.output_tokens, y.steps, y.preemptions,
                       y.kv_used_peak * 100);
  }
  out << "  sequences per step     ";
  for (const auto& [low, n] : sv::batch_size_histogram(r.steps)) out << fmt::format(" {}+: {}", low, n);
  out << "\n";
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  out << fmt::format("  simulated {} kernels ({} events) in {:.2f} s\n", kernels, r.engine.events, wall_s);
}

// The capacity search's probes as a table, and the search's answer.
void print_capacity(std::ostream& out, const sv::CapacityReport& r, const sv::ServeSpec& spec, const hw::Machine& m) {
  out << fmt::format("{} on {}: tp {}, {}, engine {}; capacity at p99 TTFT <= {}, TPOT <= {}, E2E <= {}\n",
                     spec.model->name(), m.name(), spec.tp, dtype_name(spec.dtype), spec.engine,
                     spec.slo.ttft_s > 0 ? fmt::format("{:g} s", spec.slo.ttft_s) : "-",
                     spec.slo.tpot_s > 0 ? fmt::format("{:g} ms", spec.slo.tpot_s * 1e3) : "-",
                     spec.slo.e2e_s > 0 ? fmt::format("{:g} s", spec.slo.e2e_s) : "-");
  out << fmt::format("  saturated (all requests at once): {:.2f} req/s\n", r.saturation_rate_per_s);
  out << fmt::format("  {:>10} {:>10} {:>12} {:>12} {:>12} {:>6}\n", "rate", "req/s", "output tok/s", "TTFT p99",
                     "TPOT p99", "meets");
  for (const sv::CapacityPoint& p : r.points) {
    out << fmt::format("  {:>10.3f} {:>10.3f} {:>12.1f} {:>10.1f}ms {:>10.2f}ms {:>6}\n", p.rate_per_s,
                       p.metrics.request_throughput, p.metrics.output_throughput, p.metrics.ttft_s.p99 * 1e3,
                       p.metrics.tpot_s.p99 * 1e3, p.meets ? "yes" : "no");
  }
  if (r.capacity_rate_per_s > 0) {
    out << fmt::format("  capacity: {:.3f} requests/s\n", r.capacity_rate_per_s);
  } else {
    out << "  capacity: no probed rate meets the objectives\n";
  }
}

void write_chart(const std::string& path, const sv::CapacityReport& r, const sv::ServeSpec& spec) {
  report::Chart c;
  c.title = fmt::format("{}: p99 latency against the request rate ({})", spec.model->name(), spec.engine);
  c.x_label = "request rate";
  c.x_unit = "req/s";
  c.y_label = "p99 latency";
  c.y_unit = "s";
  c.log_y = true;
  report::Series ttft{"TTFT p99", {}, {}}, tpot{"TPOT p99", {}, {}};
  for (const sv::CapacityPoint& p : r.points) {
    ttft.x.push_back(p.rate_per_s);
    ttft.y.push_back(p.metrics.ttft_s.p99);
    tpot.x.push_back(p.rate_per_s);
    tpot.y.push_back(p.metrics.tpot_s.p99);
  }
  c.series = {ttft, tpot};
  trace::OutputFile file(path);
  file.write(report::render_chart_svg(c));
  file.commit();
}

int run_capacity(const ServeOptions& o, const sv::ServeSpec& spec, const session::RunSetup& setup, Context& ctx) {
  const sv::CapacityReport r = sv::capacity_search(*setup.machine, setup.policy, spec, o.probes);
  if (!o.chart.empty() && !r.oom) write_chart(o.chart, r, spec);
  if (o.json) {
    ctx.out << sv::capacity_report_json(r, spec, setup.machine->config().file)
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  } else if (r.oom) {
    ctx.out << fmt::format("OUT OF MEMORY: {}\n", r.oom_reason);
  } else {
    print_capacity(ctx.out, r, spec, *setup.machine);
  }
  return r.oom ? kExitOom : kExitOk;
}

int run_serve(const ServeOptions& o, Context& ctx) {
  Diagnostics d;
  sv::ServeSpec spec;
  apply_parameter_flags(sv::serving_parameters(), o.params, spec, d);
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  session::RunSetup setup = session::load_run_setup(hw_file, o.sets, o.policy, d, "--policy");
  if (o.capacity && (o.probes < 1 || o.probes > sv::kMostProbes)) {
    d.error("--probes", "", fmt::format("expected 1 to {} probes, got {}", sv::kMostProbes, o.probes));
  }
  if (!o.capacity && !o.chart.empty()) d.error("--chart", "", "draws a capacity search's probes: give --capacity too");
  if (!o.capacity && o.probes != sv::kDefaultProbes) d.error("--probes", "", "counts a capacity search's probes: give --capacity too");
  if (o.capacity && !o.trace.file.empty()) d.error("--trace", "", "a capacity search makes many runs: trace one run");
  if (d.empty()) {
    Diagnostics flags;
    const bool ok = o.capacity ? sv::validate_capacity(spec, *setup.machine, flags, "flags")
                               : sv::validate_serve(spec, *setup.machine, flags, "flags");
    if (!ok) {
      for (const auto& x : flags.items()) d.error(x.path.empty() ? "flags" : session::parameter_flag(x.path), "", x.message);
      d.add_dropped(flags.dropped());
    }
  }
  if (!d.empty()) {
    ctx.err << d.to_string();
    return kExitBadInput;
  }
  if (o.capacity) return run_capacity(o, spec, setup, ctx);
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
  s->add_flag("--capacity", o->capacity,
              "Search the highest request rate that meets the --slo objectives at p99 (bisection below the "
              "saturated rate, each probe a whole run)");
  s->add_option("--probes", o->probes, "Capacity search: runs of the bisection (default 8)");
  s->add_option("--chart", o->chart, "Capacity search: write p99 TTFT and TPOT against the rate as an SVG file");
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_serve(*o, ctx); }; });
}

}  // namespace syntorch::cli
