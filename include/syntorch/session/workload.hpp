#pragma once
// A workload run from its parameters given as text, as a program asks for one (the Python
// package's syntorch.simulate, syntorch.train and syntorch.serve): the machine and its overrides, the kernel
// policy, an optional trace file, and the parameters by key (parameters.hpp), all checked before
// anything runs (InputError naming each problem), then the run, its report as JSON
// (report_json.hpp). A simulated out-of-memory is a report with status "oom", not an error.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::session {

// One workload run as a program asks for it: the machine, the policy, a trace, the parameters.
struct WorkloadRequest {
  std::string hw;                    // a hardware config file
  std::vector<std::string> sets;     // "/json/pointer=value" overrides
  std::string policy;                // "op=impl,..." or a policy file ("" for none)
  std::string trace;                 // a trace file to write ("" for none)
  std::vector<std::pair<std::string, std::string>> params;  // key, value as text
};

nlohmann::ordered_json run_generation(const WorkloadRequest& request);
nlohmann::ordered_json run_training(const WorkloadRequest& request);
nlohmann::ordered_json run_serving(const WorkloadRequest& request);  // session/serving/serve.hpp
// A capacity search (session/serving/capacity.hpp) of the serving parameters; `probes` among the
// parameters is the search's own (default 8).
nlohmann::ordered_json run_serving_capacity(const WorkloadRequest& request);

// The machine (with its overrides) and the kernel policy a run names, each checked: problems go
// to `diagnostics`, the policy's under `policy_where`; no machine when it could not be loaded.
struct RunSetup {
  std::optional<hw::Machine> machine;
  runtime::KernelPolicy policy;
};
RunSetup load_run_setup(const std::string& hw, const std::vector<std::string>& sets, const std::string& policy,
                        Diagnostics& diagnostics, const std::string& policy_where);

}  // namespace syntorch::session
