// `syntorch replay run.et [--comm-groups FILE] [--hw FILE] [--set ...] [--policy P]
// [--framework native|eager] [--trace FILE] [--json]`: a Chakra execution trace (every rank's
// run.<rank>.et) replayed on a simulated machine: compute nodes for their recorded durations,
// communication on the machine's links (docs/traces.md).

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "syntorch/session/replay.hpp"

namespace syntorch::cli {

namespace {

struct ReplayFlags {
  std::string workload;
  std::string comm_groups;
  std::string hw;
  std::string policy;
  std::vector<std::string> sets;
  std::string framework = "native";
  std::string trace;
  bool json = false;
};

std::string replay_ms(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

}  // namespace

int run_replay_workload(const std::string& workload, const std::string& hw, const std::vector<std::string>& sets,
                        const std::string& policy, const std::string& framework, const std::string& trace,
                        const std::string& comm_groups, bool json, Context& ctx) {
  session::ReplayOptions o;
  o.run.hw = hw.empty() ? default_hw_config("dgx_h100.json") : hw;
  o.run.sets = sets;
  o.run.policy = policy;
  o.run.framework = framework;
  o.run.trace = trace;
  o.workload = workload;
  o.comm_groups = comm_groups;
  const auto start = std::chrono::steady_clock::now();
  session::ReplayReport r;
  try {
    r = session::simulate_replay(o);
  } catch (const InputError& e) {
    ctx.err << e.diagnostics().to_string();
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    ctx.err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (json) {
    ctx.out << session::replay_report_json(r, workload).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
    return r.stats.oom ? kExitOom : kExitOk;
  }
  ctx.out << fmt::format("{} replayed on {}: {} rank{}\n", workload, r.stats.machine, r.ranks, r.ranks == 1 ? "" : "s");
  std::string nodes;
  for (const auto& [kind, n] : r.nodes) nodes += fmt::format("{}{} {}", nodes.empty() ? "" : ", ", n, kind);
  ctx.out << fmt::format("  nodes                   {}\n", nodes);
  ctx.out << fmt::format("  simulated time          {}\n", replay_ms(r.stats.simulated_time_s));
  ctx.out << fmt::format("  recorded span           {} (the trace's own timestamps)\n", replay_ms(r.recorded_span_s));
  ctx.out << fmt::format("  recorded compute        {} (summed over ranks)\n", replay_ms(r.recorded_compute_s));
  ctx.out << fmt::format("  simulated {} kernels ({} events) in {:.2f} s\n", r.stats.kernels, r.stats.events, wall_s);
  if (!trace.empty()) ctx.out << "trace written to " << trace << "\n";
  return r.stats.oom ? kExitOom : kExitOk;
}

void add_replay_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ReplayFlags>();
  CLI::App* s = app.add_subcommand("replay", "Replay a Chakra execution trace (ASTRA-sim's workload format)");
  s->add_option("workload", o->workload,
                "The trace: run.et for every rank file run.<rank>.et beside it, or one rank's file")
      ->required();
  s->add_option("--comm-groups", o->comm_groups,
                "Process groups, {\"<pg_name>\": [ranks...]} (default: run.comm_groups.json beside the trace)");
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json)");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  s->add_option("--framework", o->framework,
                "native: each node costs its launch only (default); eager: PyTorch's dispatch cost too")
      ->check(CLI::IsMember({"native", "eager"}));
  s->add_option("--trace", o->trace, "Write the replay's trace (.json, .json.gz, .pftrace, .et, .csv)");
  s->add_flag("--json", o->json, "Print JSON");
  s->callback([&ctx, o] {
    ctx.action = [&ctx, o] {
      return run_replay_workload(o->workload, o->hw, o->sets, o->policy, o->framework, o->trace, o->comm_groups,
                                 o->json, ctx);
    };
  });
}

}  // namespace syntorch::cli
