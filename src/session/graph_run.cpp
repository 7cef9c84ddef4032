#include "syntorch/session/graph_run.hpp"

#include <fmt/format.h>

#include "syntorch/graph/ir.hpp"
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::session {

namespace {

GraphRunReport described(const graph::Ir& ir) {
  GraphRunReport report;
  report.model = ir.model;
  report.nodes = ir.nodes.size();
  report.weights = ir.weights.size();
  for (const graph::IrWeight& w : ir.weights) {
    const graph::IrTensor& t = ir.tensors[static_cast<std::size_t>(w.tensor)];
    double n = 1;
    for (std::int64_t s : t.sizes) n *= static_cast<double>(s);
    report.weight_bytes += n * torch::element_bits(graph::scalar_type_of(t.dtype).value_or(torch::kFloat)) / 8.0;
  }
  return report;
}

// An IR whose arguments its ops cannot read, as an input error naming the file.
[[noreturn]] void bad_argument(const std::string& file, const graph::IrArgumentError& e) {
  Diagnostics bad;
  bad.error(file, "", e.what());
  throw InputError(std::move(bad));
}

}  // namespace

graph::Ir load_graph(const std::string& graph_file) {
  graph::Ir ir = graph::load_ir(graph_file);
  Diagnostics d;
  graph::check_executable(ir, graph_file, d);
  if (!d.empty()) throw InputError(std::move(d));
  return ir;
}

GraphRunReport simulate_graph(const RunOptions& options, const std::string& graph_file) {
  const graph::Ir ir = load_graph(graph_file);
  Run run(options);
  GraphRunReport report = described(ir);
  try {
    report.stats = run.run_programs(1, [&](int) { graph::execute_ir(ir, report.tally); }, false);
  } catch (const graph::IrArgumentError& e) {
    bad_argument(graph_file, e);
  }
  return report;
}

GraphRunReport simulate_graph(const hw::Machine& machine, const runtime::KernelPolicy& policy, const graph::Ir& ir,
                              runtime::Framework framework) {
  GraphRunReport report = described(ir);
  runtime::EngineOptions options;
  options.framework = framework;
  runtime::Engine engine(machine, policy, 1, options);
  try {
    report.stats = run_stats(engine.run([&](runtime::RankContext&) { graph::execute_ir(ir, report.tally); }), machine);
  } catch (const graph::IrArgumentError& e) {
    bad_argument(ir.model, e);
  }
  return report;
}

nlohmann::ordered_json graph_report_json(const GraphRunReport& r, const std::string& graph_file) {
  const RunStats& s = r.stats;
  nlohmann::ordered_json j;
  j["status"] = s.oom ? "oom" : "ok";
  j["graph"] = graph_file;
  j["model"] = r.model;
  j["nodes"] = r.nodes;
  j["weights"] = r.weights;
  j["weight_bytes"] = r.weight_bytes;
  j["machine"] = s.machine;
  j["device"] = s.device;
  j["simulated_time_s"] = s.simulated_time_s;
  j["kernels"] = s.kernels;
  j["flops"] = s.flops;
  j["hbm_bytes"] = s.hbm_bytes;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["peak_reserved_bytes"] = s.peak_reserved_bytes;
  j["events"] = s.events;
  if (s.oom) {
    j["oom"] = {{"requested_bytes", s.oom->requested_bytes}, {"requested_for", s.oom->requested_for}};
  }
  j["aten"] = r.tally.to_json();
  return j;
}

}  // namespace syntorch::session
