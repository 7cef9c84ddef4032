#include "syntorch/session/workload.hpp"

#include <fmt/format.h>

#include <type_traits>

#include "syntorch/base/key_value.hpp"

#include "syntorch/session/hardware.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/report_json.hpp"
#include "syntorch/session/serving/capacity.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/train.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::session {

RunSetup load_run_setup(const std::string& hw, const std::vector<std::string>& sets, const std::string& policy,
                        Diagnostics& d, const std::string& policy_where) {
  RunSetup setup;
  setup.policy = runtime::KernelPolicy::load(policy, d, policy_where);
  try {
    setup.machine = load_machine(hw, sets);
  } catch (const InputError& e) {
    d.append(e.diagnostics());
  }
  return setup;
}

namespace {

// Parses, checks and runs one workload of `Spec` through `table`, `check` and `simulate`.
template <class Spec, class Check, class Simulate, class ToJson>
nlohmann::ordered_json run_workload(const WorkloadRequest& r, const std::vector<Parameter<Spec>>& table, Check check,
                                    Simulate simulate, ToJson to_json) {
  Diagnostics d;
  Spec spec;
  for (const auto& [key, value] : r.params) {
    if (!set_parameter(table, spec, key, value, d, "parameters")) {
      const std::vector<std::string> keys = parameter_keys(table);
      d.error("parameters", key, fmt::format("not a parameter of this run{} (valid: {})", did_you_mean(key, keys),
                                             join(keys)));
    }
  }
  RunSetup setup = load_run_setup(r.hw, r.sets, r.policy, d, "policy");
  if (d.empty()) check(spec, *setup.machine, d, "parameters");
  if constexpr (std::is_same_v<Spec, TrainSpec>) {
    if (!spec.trace_ranks.empty() && r.trace.empty()) {
      d.error("parameters", "trace_ranks", "names the ranks a trace file shows; give a trace file too");
    }
  }
  if (!d.empty()) throw InputError(std::move(d));
  trace::Recorder recorder;
  if (!r.trace.empty()) recorder.attach(trace::open_trace_writer(r.trace, std::nullopt));
  const auto report = simulate(*setup.machine, setup.policy, spec, recorder.enabled() ? &recorder : nullptr);
  recorder.finish();
  return to_json(report, spec, setup.machine->config().file);
}

}  // namespace

nlohmann::ordered_json run_generation(const WorkloadRequest& r) {
  return run_workload(
      r, generation_parameters(), validate_run,
      [](const hw::Machine& m, const runtime::KernelPolicy& p, const RunSpec& s, trace::Recorder* rec) {
        return simulate_generation(m, p, s, rec);
      },
      generation_report_json);
}

nlohmann::ordered_json run_training(const WorkloadRequest& r) {
  return run_workload(
      r, training_parameters(), validate_train,
      [](const hw::Machine& m, const runtime::KernelPolicy& p, const TrainSpec& s, trace::Recorder* rec) {
        return simulate_training(m, p, s, rec);
      },
      training_report_json);
}

nlohmann::ordered_json run_serving(const WorkloadRequest& r) {
  return run_workload(
      r, serving::serving_parameters(), serving::validate_serve,
      [](const hw::Machine& m, const runtime::KernelPolicy& p, const serving::ServeSpec& s, trace::Recorder* rec) {
        return serving::serve(m, p, s, rec);
      },
      [](const serving::ServeReport& report, const serving::ServeSpec& spec, const std::string& hw) {
        return serving::serve_report_json(report, spec, hw);
      });
}

nlohmann::ordered_json run_serving_capacity(const WorkloadRequest& r) {
  WorkloadRequest rest = r;
  int probes = serving::kDefaultProbes;
  Diagnostics d;
  std::erase_if(rest.params, [&](const std::pair<std::string, std::string>& kv) {
    if (kv.first != "probes") return false;
    const std::optional<std::int64_t> n = parse_integer(kv.second);
    if (!n || *n < 1 || *n > serving::kMostProbes) {
      d.error("parameters", "probes",
              fmt::format("expected 1 to {} probes, got \"{}\"", serving::kMostProbes, kv.second));
    } else {
      probes = static_cast<int>(*n);
    }
    return true;
  });
  if (!d.empty()) throw InputError(std::move(d));
  if (!rest.trace.empty()) {
    d.error("parameters", "trace", "a capacity search makes many runs: trace one run");
    throw InputError(std::move(d));
  }
  return run_workload(
      rest, serving::serving_parameters(), serving::validate_capacity,
      [probes](const hw::Machine& m, const runtime::KernelPolicy& p, const serving::ServeSpec& s, trace::Recorder*) {
        return serving::capacity_search(m, p, s, probes);
      },
      [](const serving::CapacityReport& report, const serving::ServeSpec& spec, const std::string& hw) {
        return serving::capacity_report_json(report, spec, hw);
      });
}

}  // namespace syntorch::session
