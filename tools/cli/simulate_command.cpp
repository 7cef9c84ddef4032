// `syntorch simulate --model M [--hw FILE] --tp N --pp N [--ep N --expert-skew S] --batch B --input-tokens I --output-tokens O
// [--dtype D] [--policy P] [--set path=value]... [--cuda-graphs] [--trace FILE] [--json]`: one generation
// run of a model from the zoo; prints latency, throughput, memory, MFU and where the time went.
// A simulated out-of-memory prints what held the memory and exits 3.
// `syntorch simulate --graph model_ir.json [--hw FILE] [--policy P] [--set ...] [--framework F]
// [--trace FILE] [--json]`: a model's graph (syntorch IR) run once instead of a zoo model.

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "parameter_flags.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/report_json.hpp"
#include "syntorch/session/workload.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

namespace {


struct SimulateOptions {
  ParameterFlags params;  // session::generation_parameters()
  std::string hw;
  std::string policy;
  std::vector<std::string> sets;
  TraceFlags trace;
  bool json = false;
  std::string graph;  // an IR file to run instead of a zoo model
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

void print_graph_report(std::ostream& out, const session::GraphRunReport& r, const std::string& file, double wall_s) {
  const session::RunStats& s = r.stats;
  out << fmt::format("{} ({}) on {}: {} nodes, {} weights ({})\n", r.model.empty() ? "graph" : r.model, file,
                     s.machine, r.nodes, r.weights, size(static_cast<std::uint64_t>(r.weight_bytes)));
  out << fmt::format("  simulated time          {}\n", ms(s.simulated_time_s));
  out << fmt::format("  kernels                 {}\n", s.kernels);
  out << fmt::format("  FLOPs                   {:.4g}\n", s.flops);
  out << fmt::format("  HBM bytes               {:.4g}\n", s.hbm_bytes);
  if (!s.peak_memory_bytes.empty()) {
    out << fmt::format("  peak memory             {} allocated, {} reserved\n", size(s.peak_memory_bytes[0]),
                       size(s.peak_reserved_bytes[0]));
  }
  std::int64_t ops = 0;
  for (const auto& [name, n] : r.tally.counts) ops += n;
  out << fmt::format("  ATen ops                {} ({} kinds)\n", ops, r.tally.counts.size());
  for (const bool elementwise : {false, true}) {
    bool first = true;
    for (const auto& [name, g] : r.tally.generic) {
      if (g.elementwise != elementwise) continue;
      if (first) {
        out << (elementwise ? "  elementwise ops costed as memory-bound passes (no model of their own):\n"
                            : "  ops with no model, costed as memory-bound passes:\n");
        first = false;
      }
      out << fmt::format("    {:<40} x{:<5} {:5.1f}% of FLOPs, {:5.1f}% of bytes\n", name, g.count,
                         r.tally.graph_flops > 0 ? g.flops / r.tally.graph_flops * 100 : 0.0,
                         r.tally.graph_bytes > 0 ? g.bytes / r.tally.graph_bytes * 100 : 0.0);
    }
  }
  out << fmt::format("  simulated {} kernels ({} events) in {:.2f} s\n", s.kernels, s.events, wall_s);
}

// --framework as given, else `fallback` (a graph from a PyTorch program: eager; a recorded
// trace, whose gaps are already in its times: native).
std::string framework_flag(const SimulateOptions& o, const char* fallback) {
  const auto& table = session::generation_parameters();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].key == "framework" && o.params.options[i]->count() > 0) return o.params.text[i];
  }
  return fallback;
}

int run_graph(const SimulateOptions& o, Context& ctx) {
  session::RunOptions run;
  run.hw = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  run.sets = o.sets;
  run.policy = o.policy;
  run.trace = o.trace.file;
  run.framework = framework_flag(o, "eager");
  const auto start = std::chrono::steady_clock::now();
  session::GraphRunReport report;
  try {
    report = session::simulate_graph(run, o.graph);
  } catch (const InputError& e) {
    ctx.err << e.diagnostics().to_string();
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    ctx.err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    ctx.out << session::graph_report_json(report, o.graph).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  } else if (report.stats.oom) {
    const runtime::OomReport& oom = *report.stats.oom;
    ctx.out << fmt::format("OUT OF MEMORY on {}: {} requested for {}; the device has {}\n", oom.device_name,
                           size(oom.requested_bytes), oom.requested_for, size(oom.memory.capacity_bytes));
    print_oom_holders(ctx.out, oom);
  } else {
    print_graph_report(ctx.out, report, o.graph, wall_s);
    if (!o.trace.file.empty()) ctx.out << "trace written to " << o.trace.file << "\n";
  }
  return report.stats.oom ? kExitOom : kExitOk;
}

int run_simulate(const SimulateOptions& o, Context& ctx) {
  if (o.graph.size() > 3 && o.graph.compare(o.graph.size() - 3, 3, ".et") == 0) {  // a Chakra trace: replayed
    return run_replay_workload(o.graph, o.hw, o.sets, o.policy, framework_flag(o, "native"), o.trace.file, "", o.json,
                               ctx);
  }
  if (o.graph.size() > 5 && o.graph.compare(o.graph.size() - 5, 5, ".onnx") == 0) {
    ctx.err << fmt::format("--graph: {} is an ONNX model; the simulator reads syntorch IR files. Convert it first "
                           "(needs Debian's python3-torch and python3-onnx): python3 -m syntorch.ir convert {} -o "
                           "model_ir.json [--input-shapes name=8x1024], then --graph model_ir.json\n",
                           o.graph, o.graph);
    return kExitBadInput;
  }
  if (!o.graph.empty()) return run_graph(o, ctx);
  Diagnostics d;
  session::RunSpec spec;
  apply_parameter_flags(session::generation_parameters(), o.params, spec, d);
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  session::RunSetup setup = session::load_run_setup(hw_file, o.sets, o.policy, d, "--policy");
  const std::optional<hw::Machine>& machine = setup.machine;
  const runtime::KernelPolicy& policy = setup.policy;
  if (d.empty()) {
    Diagnostics flags;
    if (!session::validate_run(spec, *machine, flags, "flags")) {
      for (const auto& x : flags.items()) d.error(x.path.empty() ? "flags" : "--" + x.path, "", x.message);
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
  const session::RunReport report =
      session::simulate_generation(*machine, policy, spec, &recorder, trace_level(o.trace));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    ctx.out << session::generation_report_json(report, spec, machine->config().file)
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
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
  add_parameter_flags(*s, session::generation_parameters(), o->params);
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json)");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  add_trace_flags(*s, o->trace);
  s->add_flag("--json", o->json, "Print JSON");
  CLI::Option* graph = s->add_option(
      "--graph", o->graph,
      "Simulate a model's graph instead of a zoo model: a syntorch IR JSON file (python -m syntorch.ir), or a "
      "Chakra execution trace (run.et: replayed as syntorch replay does); its shapes are the graph's, so --model "
      "and the run's sizes do not apply");
  graph->type_name("FILE");
  const auto& table = session::generation_parameters();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].key == "framework") continue;
    o->params.options[i]->required(false);  // --model: required unless --graph (run_simulate checks)
    graph->excludes(o->params.options[i]);
  }
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_simulate(*o, ctx); }; });
}

}  // namespace syntorch::cli
