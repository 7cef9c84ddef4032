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
#include "syntorch/session/kernel.hpp"

namespace syntorch::cli {

namespace {

struct KernelFlags {
  session::KernelRequest request;
  bool json = false;
};

void print_text(std::ostream& out, const session::KernelResult& result) {
  const runtime::OpDesc& op = result.op;
  const runtime::Prediction& p = result.prediction;
  const runtime::Timing timing = result.timing;
  out << fmt::format("{} on {} ({})\n", op.describe(), result.device, result.machine);
  out << fmt::format("  time            {} ({} timing)\n", units::format_time_s(p.time_s), runtime::timing_name(timing));
  out << fmt::format("  device time     {}; a host-timed call adds {}, events around one call {}\n",
                     units::format_time_s(p.device_time_s), units::format_time_s(p.host_overhead_s),
                     units::format_time_s(p.events_overhead_s));
  if (p.plan) {
    out << fmt::format("  algorithm       {} ({} protocol)\n", p.plan->algorithm, p.plan->protocol);
    out << fmt::format("  bus bandwidth   {} (as nccl-tests reports it; {} sent per rank)\n",
                       units::format_bandwidth(session::bus_bandwidth(op, p.time_s)), units::format_size(p.plan->bytes_per_rank));
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

nlohmann::ordered_json to_json(const session::KernelResult& result) {
  const runtime::OpDesc& op = result.op;
  const runtime::Prediction& p = result.prediction;
  nlohmann::ordered_json j;
  j["op"] = std::string(runtime::op_name(op.kind));
  j["shape"] = op.describe();
  j["hw"] = result.hw_file;
  j["device"] = result.device;
  j["timing"] = runtime::timing_name(result.timing);
  j["time_us"] = p.time_s * 1e6;
  j["device_time_us"] = p.device_time_s * 1e6;
  j["host_overhead_us"] = p.host_overhead_s * 1e6;
  j["events_overhead_us"] = p.events_overhead_s * 1e6;
  j["bound"] = p.bound;
  if (p.plan) {
    j["impl"] = p.plan->algorithm;
    j["protocol"] = p.plan->protocol;
    j["bytes_per_rank"] = p.plan->bytes_per_rank;
    j["bus_bandwidth_gbps"] = session::bus_bandwidth(op, p.time_s) / 1e9;
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

int run_kernel(const KernelFlags& o, Context& ctx) {
  session::KernelResult result;
  try {
    result = session::predict_kernel(o.request);
  } catch (const InputError& e) {
    ctx.err << e.diagnostics().to_string();
    return kExitBadInput;
  }
  if (o.json) {
    ctx.out << to_json(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_text(ctx.out, result);
  }
  return kExitOk;
}

}  // namespace

void add_kernel_command(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<KernelFlags>();
  session::KernelRequest* o = &flags->request;
  CLI::App* k = app.add_subcommand("kernel", "Predict one kernel or collective by running it on the simulator");
  k->add_option("op", o->op, "Op: " + join(session::kernel_op_names()))->required();
  k->add_option("--hw", o->hw, "Hardware config JSON file")->required();
  // One flag per op parameter (seq_q as --seq-q), from the op table.
  for (const auto& [key, help] : session::kernel_shape_help()) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    k->add_option_function<std::string>("--" + flag, [o, flag](const std::string& v) { o->shape[flag] = v; }, help);
  }
  for (const auto& [key, help] : session::kernel_switch_help()) {
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
      ->check(CLI::IsMember(session::kernel_timing_names()))
      ->capture_default_str();
  k->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  k->add_flag("--json", flags->json, "Print JSON");
  k->callback([&ctx, flags] { ctx.action = [&ctx, flags] { return run_kernel(*flags, ctx); }; });
}

}  // namespace syntorch::cli
