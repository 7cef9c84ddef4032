#include "syntorch/runtime/dispatcher.hpp"

#include <fmt/format.h>

#include "collectives/collectives.hpp"
#include "kernels/kernels.hpp"
#include "ops/op_type.hpp"

namespace syntorch::runtime {

Dispatcher::Dispatcher(const hw::Machine& machine, KernelPolicy policy) : machine_(machine), policy_(std::move(policy)) {}

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
    k.why.push_back(fmt::format("on {} ({})", dev.name, machine_.name()));
  }
  return ks;
}

CollectivePlan Dispatcher::lower_collective(const OpDesc& op, std::span<const std::uint32_t> devices) const {
  Diagnostics d;
  if (!validate_op(op, d, op.describe())) throw InputError(std::move(d));
  if (!is_collective(op.kind)) fail(op.describe(), "not a collective");
  if (devices.size() < 2) fail(op.describe(), "a collective needs at least 2 devices");
  detail::CollectiveContext cx{machine_, {}, {}};
  for (std::uint32_t dev : devices) {
    if (dev >= machine_.devices().size()) {
      fail(machine_.name(), fmt::format("{} ranks requested but the machine has {} device(s)", devices.size(),
                                        machine_.devices().size()));
    }
  }
  for (std::uint32_t dev : devices) {
    const hw::Device& device = machine_.devices()[dev];
    if (!device.collective) {
      fail(device.name, "has no collective component (step_latency, chunk) describing its communication library");
    }
    cx.endpoints.push_back(device.endpoint);
    cx.library = *device.collective;
  }
  const PolicyEntry& entry = policy_.entry(op.kind);
  // A tree pays off across several switch hops (between nodes, as NCCL's double binary tree);
  // within one switch domain the libraries use ring or in-switch reduction.
  std::size_t max_hops = 0;
  for (std::uint32_t a : cx.endpoints) {
    for (std::uint32_t b : cx.endpoints) max_hops = std::max(max_hops, machine_.route(a, b).hops.size());
  }
  std::optional<CollectivePlan> plan;
  double best = 0;
  std::vector<std::string> considered;
  for (const auto& algo : detail::collective_algorithms()) {
    if (algo.op != op.kind) continue;
    const bool chosen = entry.impl == algo.name;
    if (entry.impl != "auto" && !chosen) continue;
    if (entry.impl == "auto" && algo.name == "tree" && max_hops <= 2) continue;
    std::optional<CollectivePlan> p = algo.build(op, cx);
    if (!p) {
      if (chosen) {
        fail(machine_.name(), fmt::format("{} {} needs {}; not here", algo.name, op_name(op.kind), algo.needs));
      }
      continue;
    }
    considered.emplace_back(algo.name);
    const double t = algo.estimate ? algo.estimate(op, cx) : 0.0;
    if (!plan || t < best) {
      best = t;
      plan = std::move(p);
    }
  }
  if (!plan) {
    fail(op.describe(), fmt::format("no collective algorithm {} is registered for {}", entry.impl, op_name(op.kind)));
  }
  const std::string reason =
      entry.impl == "auto"
          ? fmt::format("policy {}=auto: {} has the lowest alpha-beta estimate among {} (what this topology supports)",
                        op_name(op.kind), plan->algorithm, join(considered))
          : fmt::format("policy {}={}", op_name(op.kind), entry.impl);
  plan->why.insert(plan->why.begin(), reason);
  plan->why.push_back(fmt::format("{} ranks on {}; library step latency {} s, chunk {} B", devices.size(), machine_.name(),
                                  cx.library.step_latency_s, cx.library.chunk_bytes));
  return std::move(*plan);
}

}  // namespace syntorch::runtime
