// `syntorch kernel OP --hw FILE [shape flags] [--dtype D] [--policy P] [--timing device|host|events] [--json]`:
// predicts one kernel (or collective) by running it on the simulator.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::cli {

namespace {

struct KernelOptions {
  std::string op;
  std::string hw;
  std::vector<std::string> sets;
  std::string dtype = "fp16";
  std::string policy;
  std::string algo;
  std::string timing = "device";
  bool json = false;
  std::map<std::string, std::string> shape;  // flag name -> value, only those given
};

runtime::KernelPolicy make_policy(const KernelOptions& o, runtime::OpKind op, Diagnostics& d) {
  runtime::KernelPolicy p = runtime::KernelPolicy::load(o.policy, d, "--policy");
  if (!o.algo.empty()) {
    runtime::KernelPolicy algo = runtime::KernelPolicy::parse(fmt::format("{}={}", runtime::op_name(op), o.algo), d, "--algo");
    p.set(op, algo.entry(op));
  }
  return p;
}

// nccl-tests' bus bandwidth: message bytes over time, times the factor that makes it comparable
// with the link bandwidth (2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all).
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

void print_text(std::ostream& out, const runtime::OpDesc& op, const hw::Machine& m, const runtime::Prediction& p,
                runtime::Timing timing) {
  out << fmt::format("{} on {} ({})\n", op.describe(), m.devices()[0].name, m.name());
  out << fmt::format("  time            {} ({} timing)\n", units::format_time_s(p.time_s), runtime::timing_name(timing));
  out << fmt::format("  device time     {}; a host-timed call adds {}, events around one call {}\n",
                     units::format_time_s(p.device_time_s), units::format_time_s(p.host_overhead_s),
                     units::format_time_s(p.events_overhead_s));
  if (p.plan) {
    out << fmt::format("  algorithm       {} ({} protocol)\n", p.plan->algorithm, p.plan->protocol);
    out << fmt::format("  bus bandwidth   {} (as nccl-tests reports it; {} sent per rank)\n",
                       units::format_bandwidth(bus_bandwidth(op, p.time_s)), units::format_size(p.plan->bytes_per_rank));
    out << fmt::format("  bound           {}\n", p.bound);
    out << "  why\n";
    for (const auto& w : p.plan->why) out << "    - " << w << "\n";
    return;
  }
  out << fmt::format("  achieved        {}, {} from HBM\n", units::format_flops(p.flops / p.time_s),
                     units::format_bandwidth(p.hbm_bytes / p.time_s));
  out << fmt::format("  bound           {}\n", p.bound);
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const runtime::Kernel& k = p.kernels[i];
    const runtime::KernelRun& r = p.runs[i];
    out << fmt::format("  kernel          {} [{}{}]: {}, {} tiles on {} units ({:.2f} waves)\n", k.name, k.impl,
                       k.tile.empty() ? "" : ", tile " + k.tile, units::format_time_ps(r.end_ps - r.start_ps), k.tiles,
                       r.units, r.waves);
    for (const auto& w : k.why) out << "    - " << w << "\n";
  }
}

nlohmann::ordered_json to_json(const runtime::OpDesc& op, const hw::Machine& m, const runtime::Prediction& p,
                               runtime::Timing timing) {
  nlohmann::ordered_json j;
  j["op"] = std::string(runtime::op_name(op.kind));
  j["shape"] = op.describe();
  j["hw"] = m.config().file;
  j["device"] = m.devices()[0].name;
  j["timing"] = runtime::timing_name(timing);
  j["time_us"] = p.time_s * 1e6;
  j["device_time_us"] = p.device_time_s * 1e6;
  j["host_overhead_us"] = p.host_overhead_s * 1e6;
  j["events_overhead_us"] = p.events_overhead_s * 1e6;
  j["bound"] = p.bound;
  if (p.plan) {
    j["impl"] = p.plan->algorithm;
    j["protocol"] = p.plan->protocol;
    j["bytes_per_rank"] = p.plan->bytes_per_rank;
    j["bus_bandwidth_gbps"] = bus_bandwidth(op, p.time_s) / 1e9;
    j["transfers"] = p.plan->transfers.size();
    j["why"] = p.plan->why;
    return j;
  }
  j["impl"] = p.kernels.empty() ? "" : p.kernels[0].impl;
  j["tile"] = p.kernels.empty() ? "" : p.kernels[0].tile;
  j["tflops"] = p.flops / p.time_s / 1e12;
  j["hbm_gbps"] = p.hbm_bytes / p.time_s / 1e9;
  j["flops"] = p.flops;
  j["hbm_bytes"] = p.hbm_bytes;
  auto& ks = j["kernels"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const auto& k = p.kernels[i];
    const auto& r = p.runs[i];
    ks.push_back({{"name", k.name}, {"impl", k.impl}, {"tile", k.tile}, {"time_us", static_cast<double>(r.end_ps - r.start_ps) * 1e-6},
                  {"tiles", k.tiles}, {"units", r.units}, {"waves", r.waves}, {"flops", k.flops},
                  {"hbm_bytes", k.hbm_bytes}, {"why", k.why}});
  }
  return j;
}

int run_kernel(const KernelOptions& o, Context& ctx) {
  Diagnostics d;
  const auto op_kind = runtime::parse_op(o.op);
  if (!op_kind) {
    ctx.err << fmt::format("OP: unknown op \"{}\"{} (valid: {})\n", o.op, did_you_mean(o.op, runtime::op_names()),
                           join(runtime::op_names()));
    return kExitBadInput;
  }
  runtime::OpDesc op;
  op.kind = *op_kind;
  auto params = o.shape;
  params["dtype"] = o.dtype;
  Diagnostics shape_problems;
  runtime::op_from_params(params, {}, op, shape_problems, "flags");
  for (const auto& x : shape_problems.items()) {
    std::string flag = x.path;
    std::replace(flag.begin(), flag.end(), '_', '-');
    d.error(flag.empty() ? "flags" : "--" + flag, "", x.message);
  }
  const runtime::KernelPolicy policy = make_policy(o, op.kind, d);
  const auto overrides = hw::parse_overrides(o.sets, d);
  const runtime::Timing timing = runtime::parse_timing(o.timing).value_or(runtime::Timing::device);
  std::optional<hw::Machine> machine;
  try {
    machine = hw::Machine::load(o.hw, overrides);
  } catch (const InputError& e) {
    d.append(e.diagnostics());
  }
  if (!d.empty()) {
    ctx.err << d.to_string();
    return kExitBadInput;
  }
  if (runtime::is_collective(op.kind) && op.ranks > machine->devices().size()) {
    ctx.err << fmt::format("--ranks: {} ranks requested but {} has {} device(s)\n", op.ranks, o.hw,
                           machine->devices().size());
    return kExitBadInput;
  }
  runtime::Prediction p;
  try {
    runtime::Predictor predictor(*machine, policy);
    p = predictor.predict(op, timing);
  } catch (const InputError& e) {
    // The shape was checked above: what the device cannot run is the implementation or the
    // precision asked for, so name that flag; an op the config itself rules out names the config.
    const char* flag = !o.algo.empty() ? "--algo" : !o.policy.empty() ? "--policy" : "--dtype";
    for (const auto& x : e.diagnostics().items()) {
      if (x.where != machine->config().file && x.where.rfind("--", 0) != 0) ctx.err << flag << ": ";
      ctx.err << x.to_string() << "\n";
    }
    return kExitBadInput;
  }
  if (o.json) {
    ctx.out << to_json(op, *machine, p, timing).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_text(ctx.out, op, *machine, p, timing);
  }
  return kExitOk;
}

}  // namespace

void add_kernel_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<KernelOptions>();
  CLI::App* k = app.add_subcommand("kernel", "Predict one kernel or collective by running it on the simulator");
  k->add_option("op", o->op, "Op: " + join(runtime::op_names()))->required();
  k->add_option("--hw", o->hw, "Hardware config JSON file")->required();
  // One flag per op parameter (seq_q as --seq-q), from the op table.
  for (const auto& [key, help] : runtime::op_param_help()) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    k->add_option_function<std::string>("--" + flag, [o, flag](const std::string& v) { o->shape[flag] = v; }, help);
  }
  for (const auto& [key, help] : runtime::op_flag_help()) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    k->add_flag_function("--" + flag, [o, key](std::int64_t n) { o->shape[key] = n > 0 ? "true" : "false"; }, help);
  }
  k->add_option("--dtype", o->dtype, "Data type: " + join(dtype_names()))->capture_default_str();
  k->add_option("--policy", o->policy,
                "Kernel policy: op=impl[:precision],... (a collective: op=impl[:protocol]) or a JSON/YAML file");
  k->add_option("--algo", o->algo,
                "Implementation for this op (e.g. ring, tree, in_switch for allreduce; ring:ll128 pins the protocol)");
  k->add_option("--timing", o->timing,
                "device: kernel time; host: as a host clock around a synchronised call sees it; events: as CUDA "
                "events around one call on an idle stream see it")
      ->check(CLI::IsMember(runtime::timing_names()))
      ->capture_default_str();
  k->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  k->add_flag("--json", o->json, "Print JSON");
  k->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_kernel(*o, ctx); }; });
}

}  // namespace syntorch::cli
