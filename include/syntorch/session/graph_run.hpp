#pragma once
// A model's graph run as the workload (`syntorch simulate --graph model_ir.json`, Python's
// syntorch.simulate_graph): the IR read and checked whole, then run once on one device of the
// machine (graph/execute.hpp): its time, kernels, memory, and the tally of its ATen ops with those
// that had no model of their own.

#include <nlohmann/json.hpp>
#include <string>

#include "syntorch/graph/execute.hpp"
#include "syntorch/graph/ir.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/session/run.hpp"

namespace syntorch::session {

struct GraphRunReport {
  RunStats stats;
  graph::OpTally tally;
  std::string model;       // the IR's model name
  std::size_t nodes = 0;
  std::size_t weights = 0;
  double weight_bytes = 0;
};

// Reads the graph file and checks it (InputError naming the file, the JSON path, what was
// expected and found), then runs it on the machine `options` names. A simulated out-of-memory is
// a report whose stats carry it, not an error.
GraphRunReport simulate_graph(const RunOptions& options, const std::string& graph_file);

// The same for an IR already read, on a loaded machine and policy (validation rows): no trace.
GraphRunReport simulate_graph(const hw::Machine& machine, const runtime::KernelPolicy& policy, const graph::Ir& ir,
                              runtime::Framework framework);
// Reads and checks an IR file for a run (InputError naming the file, the JSON path, what was
// expected and found).
graph::Ir load_graph(const std::string& graph_file);

// The report as JSON: status ("ok" or "oom"), the graph's name and size, simulated time,
// kernels, FLOPs, HBM bytes, peak memory per device, and the op tally under "aten".
nlohmann::ordered_json graph_report_json(const GraphRunReport& report, const std::string& graph_file);

}  // namespace syntorch::session
