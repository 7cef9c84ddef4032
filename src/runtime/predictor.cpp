#include "syntorch/runtime/predictor.hpp"

#include <numeric>

#include "syntorch/base/units.hpp"

namespace syntorch::runtime {

Predictor::Predictor(const hw::Machine& machine, KernelPolicy policy)
    : machine_(machine),
      dispatcher_(machine, std::move(policy)),
      hw_(std::make_unique<hw::SimMachine>(sim_, machine)),
      executor_(std::make_unique<Executor>(*hw_)) {}

Predictor::~Predictor() = default;

std::string_view timing_name(Timing t) {
  switch (t) {
    case Timing::device: return "device";
    case Timing::host: return "host";
    case Timing::events: return "events";
  }
  return "device";
}

const std::vector<std::string>& timing_names() {
  static const std::vector<std::string> kNames{"device", "host", "events"};
  return kNames;
}

std::optional<Timing> parse_timing(std::string_view name) {
  for (Timing t : {Timing::device, Timing::host, Timing::events}) {
    if (timing_name(t) == name) return t;
  }
  return std::nullopt;
}

void Predictor::run_kernels(Prediction& p) {
  // Device timing: the kernels back to back on one stream from now.
  const sim::TimePs start = sim_.now();
  p.runs.resize(p.kernels.size());
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    executor_->launch(p.kernels[i], p.runs[i], nullptr, nullptr, 0);  // the run ends when the queue is empty
    sim_.run();
  }
  p.device_time_s = static_cast<double>(sim_.now() - start) * 1e-12;
}

void Predictor::run_collective(Prediction& p) {
  const sim::TimePs start = sim_.now();
  executor_->run_collective(*p.plan, nullptr, nullptr, 0);
  sim_.run();
  p.device_time_s = static_cast<double>(sim_.now() - start) * 1e-12;
}

Prediction Predictor::predict(const OpDesc& op, Timing timing) {
  try {
    return predict_unchecked(op, timing);
  } catch (const std::overflow_error& e) {
    // The simulator's state is unusable after an overflow: start afresh for the next prediction.
    executor_.reset();  // before the machine it observes
    hw_.reset();
    sim_ = sim::Simulator{};
    hw_ = std::make_unique<hw::SimMachine>(sim_, machine_);
    executor_ = std::make_unique<Executor>(*hw_);
    Diagnostics d;
    d.error(op.describe(), "", std::string("cannot be simulated: ") + e.what());
    throw InputError(std::move(d));
  }
}

Prediction Predictor::predict_unchecked(const OpDesc& op, Timing timing) {
  Prediction p;
  if (is_collective(op.kind)) {
    std::vector<std::uint32_t> devices(op.ranks);
    std::iota(devices.begin(), devices.end(), 0u);
    p.plan = dispatcher_.lower_collective(op, devices);
    run_collective(p);
    p.hbm_bytes = p.plan->bytes_per_rank;
    p.bound = "communication";
  } else {
    p.kernels = dispatcher_.lower(op, 0);
    run_kernels(p);
    sim::TimePs compute = 0, memory = 0, overhead = 0, total = 0;
    for (std::size_t i = 0; i < p.kernels.size(); ++i) {
      p.flops += p.kernels[i].flops;
      p.hbm_bytes += p.kernels[i].hbm_bytes;
      compute += p.runs[i].compute_ps;
      memory += p.runs[i].memory_ps;
      overhead += p.runs[i].overhead_ps;
      total += p.runs[i].end_ps - p.runs[i].start_ps;
    }
    p.bound = 2 * overhead >= total ? "latency" : compute >= memory ? "compute" : "memory";
  }
  // Host timing: the host dispatches the op, launches each kernel, the first starts after the
  // launch latency, and the host notices the end after the synchronisation latency.
  const auto host = machine_.devices().empty() ? std::nullopt : machine_.host_of_device(0);
  if (host) {
    const hw::HostSpec& h = machine_.hosts()[*host].spec;
    // Kernel i is enqueued after the dispatch and i+1 launch calls and starts once both its
    // launch latency has passed and the previous kernel has finished.
    std::vector<double> durations;
    for (const KernelRun& r : p.runs) durations.push_back(static_cast<double>(r.end_ps - r.start_ps) * 1e-12);
    if (durations.empty()) durations.push_back(p.device_time_s);  // a collective: one launch
    double end = 0;
    for (std::size_t i = 0; i < durations.size(); ++i) {
      const double ready = h.op_dispatch_s + static_cast<double>(i + 1) * h.kernel_launch_s + h.launch_latency_s;
      end = std::max(ready, end) + durations[i];
    }
    const double host_total = end + h.sync_latency_s;
    p.host_overhead_s = host_total - p.device_time_s;
    // Events: the start record reaches the idle stream one launch latency after the host issued
    // it, and so does every later command; what separates the records is the host's work.
    p.events_overhead_s = end - h.launch_latency_s - p.device_time_s;
    const double overhead = timing == Timing::host ? p.host_overhead_s : p.events_overhead_s;
    if (timing != Timing::device && overhead > p.device_time_s) p.bound = "launch";
  }
  p.time_s = p.device_time_s + (timing == Timing::host     ? p.host_overhead_s
                                : timing == Timing::events ? p.events_overhead_s
                                                           : 0.0);
  return p;
}

}  // namespace syntorch::runtime
