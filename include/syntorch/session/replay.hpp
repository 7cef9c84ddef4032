#pragma once
// A Chakra execution trace replayed on a simulated machine (`syntorch replay`): one rank program
// per trace rank issues its nodes in dependency order, compute nodes as kernels of their recorded
// duration, collectives and sends/receives as the machine's own communication, each kind of node
// on a stream of its own with the trace's dependencies between streams kept by events. What the
// recorded hardware did is replayed; what the simulated machine's network makes of the traffic is
// simulated.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "syntorch/session/run.hpp"

namespace syntorch::session {

struct ReplayOptions {
  RunOptions run;           // the machine, overrides, policy, trace to write, framework
  std::string workload;     // "dir/run.et": every "dir/run.<rank>.et" (or one rank's file)
  std::string comm_groups;  // the process groups file ("" for "dir/run.comm_groups.json" when it is there)
};

struct ReplayReport {
  RunStats stats;
  int ranks = 0;
  std::map<std::string, std::uint64_t> nodes;  // by kind: compute, cpu, collective, send, recv, other
  double recorded_span_s = 0;                  // the trace's own span: last end - first start, any rank
  double recorded_compute_s = 0;               // the compute nodes' recorded durations, summed over ranks
};

// Reads the trace and checks it whole against the machine (InputError naming the file, the node
// and what is wrong), then replays it. A simulated out-of-memory is a result in the stats.
ReplayReport simulate_replay(const ReplayOptions& options);

nlohmann::ordered_json replay_report_json(const ReplayReport& report, const std::string& workload);

}  // namespace syntorch::session
