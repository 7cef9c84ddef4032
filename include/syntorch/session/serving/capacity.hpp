#pragma once
// Capacity: the highest request rate at which a deployment still meets its latency objectives at
// the 99th percentile (TTFT, TPOT and end-to-end, those given), as MLPerf's Server scenario and
// operators judge it. An offline run (every request at once) gives the rate the deployment
// completes when saturated; bisection between 0 and that rate, each probe a whole serving run of
// the spec's traffic at the probed rate (the same seed: the same requests, their arrivals
// stretched), finds the capacity. The probes, by rate, are the latency-throughput curve.

#include <string>
#include <vector>

#include "syntorch/session/serving/serve.hpp"

namespace syntorch::session::serving {

struct CapacityPoint {
  double rate_per_s = 0;
  ServeMetrics metrics;
  bool meets = false;
};

struct CapacityReport {
  bool oom = false;  // the engine could not start (serve's reason)
  std::string oom_reason;
  double saturation_rate_per_s = 0;  // requests a second the offline run completed
  double capacity_rate_per_s = 0;    // the highest probed rate that met the objectives (0: none did)
  std::vector<CapacityPoint> points;  // every probe, rate ascending
};

// Whether a run's p99 latencies meet every objective `slo` gives.
bool meets_slo(const ServeMetrics& metrics, const Slo& slo);

// Problems with searching `spec` (on top of validate_serve's): no objective, or arrivals a
// requests file fixes.
bool validate_capacity(const ServeSpec& spec, const hw::Machine& machine, Diagnostics& diagnostics,
                       const std::string& where);

// A capacity search's bisection steps: by default, and at most.
inline constexpr int kDefaultProbes = 8;
inline constexpr int kMostProbes = 30;

// Throws InputError for a spec validate_capacity rejects. `probes` bisection steps (1 to
// kMostProbes).
CapacityReport capacity_search(const hw::Machine& machine, const runtime::KernelPolicy& policy, const ServeSpec& spec,
                               int probes = kDefaultProbes);

nlohmann::ordered_json capacity_report_json(const CapacityReport& report, const ServeSpec& spec,
                                            const std::string& hw_file);

}  // namespace syntorch::session::serving
