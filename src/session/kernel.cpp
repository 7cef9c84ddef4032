#include "syntorch/session/kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "syntorch/session/workload.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::session {

KernelResult predict_kernel(const KernelRequest& r) {
  Diagnostics d;
  const auto op_kind = runtime::parse_op(r.op);
  if (!op_kind) {
    d.error("OP", "", fmt::format("unknown op \"{}\"{} (valid: {})", clip(r.op, 64), did_you_mean(r.op, runtime::op_names()),
                                  join(runtime::op_names())));
    throw InputError(std::move(d));
  }
  KernelResult out;
  out.op.kind = *op_kind;
  auto params = r.shape;
  params["dtype"] = r.dtype;
  Diagnostics shape_problems;
  runtime::op_from_params(params, {}, out.op, shape_problems, "flags");
  for (const auto& x : shape_problems.items()) {
    std::string flag = x.path;
    std::replace(flag.begin(), flag.end(), '_', '-');
    d.error(flag.empty() ? "flags" : "--" + flag, "", x.message);
  }
  d.add_dropped(shape_problems.dropped());
  // The machine and the policy as every run loads them, then --algo over the policy's entry.
  RunSetup setup = load_run_setup(r.hw, r.sets, r.policy, d, "--policy");
  if (!r.algo.empty()) {
    const runtime::KernelPolicy algo =
        runtime::KernelPolicy::parse(fmt::format("{}={}", runtime::op_name(out.op.kind), r.algo), d, "--algo");
    setup.policy.set(out.op.kind, algo.entry(out.op.kind));
  }
  const runtime::KernelPolicy& policy = setup.policy;
  const std::optional<hw::Machine>& machine = setup.machine;
  const std::optional<runtime::Timing> timing = runtime::parse_timing(r.timing);
  if (!timing) {
    d.error("--timing", "", fmt::format("expected one of {}, got \"{}\"", join(runtime::timing_names()), clip(r.timing, 64)));
  }
  if (!d.empty()) throw InputError(std::move(d));
  if (runtime::is_collective(out.op.kind) && out.op.ranks > machine->devices().size()) {
    d.error("--ranks", "", fmt::format("{} ranks requested but {} has {} device(s)", out.op.ranks, r.hw,
                                       machine->devices().size()));
    throw InputError(std::move(d));
  }
  out.timing = *timing;
  out.device = machine->devices()[0].name;
  out.machine = machine->name();
  out.hw_file = machine->config().file;
  try {
    runtime::Predictor predictor(*machine, policy);
    out.prediction = predictor.predict(out.op, out.timing);
  } catch (const InputError& e) {
    // The shape was checked above: what the device cannot run is the implementation or the
    // precision asked for, so name that flag; an op the config itself rules out names the config.
    const char* flag = !r.algo.empty() ? "--algo" : !r.policy.empty() ? "--policy" : "--dtype";
    for (const auto& x : e.diagnostics().items()) {
      const bool named = x.where == out.hw_file || x.where.rfind("--", 0) == 0;
      d.error(named ? x.where : fmt::format("{}: {}", flag, x.where), x.path, x.message);
    }
    d.add_dropped(e.diagnostics().dropped());
    throw InputError(std::move(d));
  }
  return out;
}

std::vector<std::string> kernel_op_names() { return runtime::op_names(); }
std::vector<std::pair<std::string, std::string>> kernel_shape_help() { return runtime::op_param_help(); }
std::vector<std::pair<std::string, std::string>> kernel_switch_help() { return runtime::op_flag_help(); }
std::vector<std::string> kernel_timing_names() { return runtime::timing_names(); }

double bus_bandwidth(const runtime::OpDesc& op, double time_s) {
  const double n = op.ranks;
  double factor = 1;
  if (op.kind == runtime::OpKind::allreduce) factor = 2 * (n - 1) / n;
  if (op.kind == runtime::OpKind::allgather || op.kind == runtime::OpKind::reducescatter ||
      op.kind == runtime::OpKind::alltoall) {
    factor = (n - 1) / n;
  }
  return static_cast<double>(op.bytes) / time_s * factor;
}

}  // namespace syntorch::session
