#include "syntorch/runtime/dispatcher.hpp"

#include <fmt/format.h>

#include "collectives/collectives.hpp"
#include "syntorch/base/units.hpp"
#include "kernels/kernels.hpp"
#include "ops/op_type.hpp"

namespace syntorch::runtime {

Dispatcher::Dispatcher(const hw::Machine& machine, KernelPolicy policy) : machine_(machine), policy_(std::move(policy)) {
  Diagnostics d;
  supported_ = ops_supported(machine_, d);
  // A protocol the policy names must be one the machine's collective libraries have, whether or
  // not this run reaches that collective.
  for (std::size_t i = 0; i < kOpKinds; ++i) {
    const auto k = static_cast<OpKind>(i);
    const PolicyEntry& e = policy_.entry(k);
    if (!e.protocol) continue;
    for (const hw::Device& dev : machine_.devices()) {
      if (!dev.collective || dev.collective->protocol(*e.protocol)) continue;
      std::vector<std::string> names;
      for (const auto& p : dev.collective->protocols) names.push_back(p.name);
      d.error(fmt::format("{}={}:{}", op_name(k), e.impl, *e.protocol), "",
              fmt::format("the collective library of {} ({}) has no protocol \"{}\" (it has: {})", dev.name,
                          machine_.config().file, *e.protocol, join(names)));
      break;
    }
  }
  if (!d.empty()) throw InputError(std::move(d));
}

void Dispatcher::check_supported(const OpDesc& op, std::uint32_t device) const {
  if (supported_[device].test(static_cast<std::size_t>(op.kind))) return;
  const hw::Device& dev = machine_.devices()[device];
  Diagnostics d;
  d.error(machine_.config().file, dev.compute.ops_supported_pointer,
          fmt::format("{} may run only {} (its compute unit's metadata.ops_supported); {} is not among them", dev.name,
                      join(dev.compute.ops_supported), op_name(op.kind)));
  throw InputError(std::move(d));
}

namespace {
[[noreturn]] void fail(const std::string& where, const std::string& message) {
  Diagnostics d;
  d.error(where, "", message);
  throw InputError(std::move(d));
}
}  // namespace

std::vector<Kernel> Dispatcher::lower(const OpDesc& op, std::uint32_t device) const {
  Diagnostics d;
  if (!validate_op(op, d, op.describe())) throw InputError(std::move(d));
  if (is_collective(op.kind)) fail(op.describe(), "a collective needs lower_collective");
  if (device >= machine_.devices().size()) fail(machine_.name(), fmt::format("no device {}", device));
  check_supported(op, device);
  const hw::Device& dev = machine_.devices()[device];
  const PolicyEntry& entry = policy_.entry(op.kind);
  const DType dtype = entry.precision.value_or(op.dtype);
  const detail::LowerContext cx{dev, device, entry, dtype};
  std::vector<Kernel> ks = op_type(op.kind).lower(op, cx);
  const std::string precision = entry.precision
                                    ? fmt::format("precision {} from the policy (the op is {})", dtype_name(dtype), dtype_name(op.dtype))
                                    : fmt::format("precision {} (the op's own)", dtype_name(dtype));
  for (Kernel& k : ks) {
    k.op = op.kind;
    k.why.push_back(precision);
    // The device's group, not the device: every device of the group lowers the op alike, and
    // shares these kernels (the trace's track says which device ran them).
    k.why.push_back(fmt::format("on the devices of {} ({})", dev.spec_path.empty() ? dev.name : dev.spec_path,
                                machine_.name()));
  }
  return ks;
}

CollectivePlan Dispatcher::lower_collective(const OpDesc& op, std::span<const std::uint32_t> devices) const {
  Diagnostics d;
  if (!validate_op(op, d, op.describe())) throw InputError(std::move(d));
  if (!is_collective(op.kind)) fail(op.describe(), "not a collective");
  if (devices.size() < 2) fail(op.describe(), "a collective needs at least 2 devices");
  detail::CollectiveContext cx{machine_, {}, {}, {}, {}};
  for (std::uint32_t dev : devices) {
    if (dev >= machine_.devices().size()) {
      fail(machine_.name(), fmt::format("{} ranks requested but the machine has {} device(s)", devices.size(),
                                        machine_.devices().size()));
    }
  }
  for (std::uint32_t dev : devices) {
    check_supported(op, dev);
    const hw::Device& device = machine_.devices()[dev];
    if (!device.collective) {
      fail(device.name, "has no collective component (step_latency, chunk) describing its communication library");
    }
    cx.endpoints.push_back(device.endpoint);
    cx.library = *device.collective;
  }
  const PolicyEntry& entry = policy_.entry(op.kind);
  // A tree pays off across several switch hops or between nodes (NCCL's double binary tree of the
  // nodes); within one switch domain the libraries use ring or in-switch reduction.
  // Hops from the first member to the others stand for every pair's (every pair would be
  // quadratic in the members, millions of routes at thousands). Exact where every member sees
  // the others alike (a switch, a fat tree of even depth, a ring or torus); elsewhere a pair
  // farther apart than any from the first member could be missed.
  std::size_t max_hops = 0;
  for (std::uint32_t b : cx.endpoints) max_hops = std::max(max_hops, machine_.route(cx.endpoints.front(), b).hops.size());
  // Whether the ranks span nodes is asked only when it decides (it compares every pair's routes).
  auto tree_pays = [&] { return max_hops > 2 || detail::nodes_of(cx).size() > 1; };
  // Every (algorithm, protocol) pair the policy allows and the topology supports is estimated;
  // the fastest is built, as NCCL's tuner picks an algorithm and a protocol per call.
  const hw::CollectiveSpec library = cx.library;
  const std::string asked = entry.protocol ? fmt::format("{}={}:{}", op_name(op.kind), entry.impl, *entry.protocol)
                                           : fmt::format("{}={}", op_name(op.kind), entry.impl);
  // A protocol the policy names exists in every library: the constructor checked.
  const detail::CollectiveAlgorithm* best_algo = nullptr;
  const hw::CollectiveProtocol* best_protocol = nullptr;
  std::optional<CollectivePlan> best_simple_plan;  // the winner's plan when it won in simple
  double best = 0;
  std::size_t candidates = 0;
  bool skipped_for_protocol = false;
  std::vector<std::string> considered;
  for (const auto& algo : detail::collective_algorithms()) {
    if (algo.op != op.kind) continue;
    const bool chosen = entry.impl == algo.name;
    if (entry.impl != "auto" && !chosen) continue;
    if (entry.impl == "auto" && algo.name == "tree" && !tree_pays()) continue;
    if (entry.protocol && *entry.protocol != "simple" && !algo.any_protocol) {
      if (chosen) fail(op.describe(), fmt::format("policy {}: {} runs in the simple protocol only", asked, algo.name));
      skipped_for_protocol = true;
      continue;
    }
    cx.protocol = library.simple();
    // An algorithm that may decline is built once, in the simple protocol, to know whether the
    // topology runs it; the others are built only if they win.
    std::optional<CollectivePlan> simple_plan;
    if (!algo.needs.empty()) simple_plan = algo.build(op, cx);
    if (!algo.needs.empty() && !simple_plan) {  // the topology cannot run it
      if (chosen) {
        fail(machine_.name(), fmt::format("{} {} needs {}; not here", algo.name, op_name(op.kind), algo.needs));
      }
      continue;
    }
    for (const hw::CollectiveProtocol& protocol : library.protocols) {
      if (entry.protocol ? protocol.name != *entry.protocol : (!algo.any_protocol && &protocol != &library.simple())) {
        continue;
      }
      cx.protocol = protocol;
      const double t = protocol.launch_latency_s + (algo.estimate ? algo.estimate(op, cx) : 0.0);
      considered.push_back(library.protocols.size() > 1 ? fmt::format("{}:{}", algo.name, protocol.name)
                                                        : std::string(algo.name));
      ++candidates;
      if (!best_algo || t < best) {
        best = t;
        best_algo = &algo;
        best_protocol = &protocol;
        if (&protocol == &library.simple()) {
          best_simple_plan = std::move(simple_plan);
        } else {
          best_simple_plan.reset();  // not kept for nothing
        }
      }
    }
  }
  if (!best_algo) {
    if (skipped_for_protocol) {
      fail(op.describe(), fmt::format("policy {}: no {} algorithm runs in the {} protocol (only in simple)", asked,
                                      op_name(op.kind), *entry.protocol));
    }
    fail(op.describe(), fmt::format("no collective algorithm {} is registered for {}", entry.impl, op_name(op.kind)));
  }
  cx.protocol = *best_protocol;
  std::optional<CollectivePlan> plan = best_protocol == &library.simple() && best_simple_plan
                                           ? std::move(best_simple_plan)
                                           : best_algo->build(op, cx);
  if (!plan) fail(machine_.name(), fmt::format("{} {} cannot run here", best_algo->name, op_name(op.kind)));
  plan->protocol_index = static_cast<std::uint32_t>(best_protocol - library.protocols.data());
  // Transfers carry payload; the protocol's flags travel with it on the wire.
  plan->protocol = best_protocol->name;
  plan->launch_latency_s += best_protocol->launch_latency_s;
  for (Transfer& t : plan->transfers) t.bytes /= best_protocol->payload;
  const std::string chosen_name = library.protocols.size() > 1
                                      ? fmt::format("{} in the {} protocol", plan->algorithm, plan->protocol)
                                      : plan->algorithm;
  const std::string reason =
      candidates > 1 ? fmt::format("policy {}: {} has the lowest alpha-beta estimate ({}) among {} (what this topology "
                                   "supports)",
                                   asked, chosen_name, units::format_time_s(best), join(considered))
                     : fmt::format("policy {}: {}", asked, chosen_name);
  plan->why.insert(plan->why.begin(), reason);
  const hw::CollectiveProtocol& p = *best_protocol;
  const double algorithm_latency_s = plan->launch_latency_s - p.launch_latency_s;  // in-switch barriers
  plan->why.push_back(fmt::format("{} ranks on {}; {} protocol: launch {}{}, step {}, chunk {}, {} channel(s){}",
                                  devices.size(), machine_.name(), p.name, units::format_time_s(p.launch_latency_s),
                                  algorithm_latency_s > 0
                                      ? fmt::format(" + {} for the algorithm", units::format_time_s(algorithm_latency_s))
                                      : "",
                                  units::format_time_s(p.step_latency_s), units::format_size(p.chunk_bytes), p.channels,
                                  p.payload < 1 ? fmt::format(", {:g} of the wire is payload", p.payload) : ""));
  return std::move(*plan);
}

}  // namespace syntorch::runtime
