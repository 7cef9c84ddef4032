#include "syntorch/runtime/dispatcher.hpp"

#include <fmt/format.h>

#include "collectives/collectives.hpp"
#include "kernels/kernels.hpp"

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
  std::vector<Kernel> ks;
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::bmm: ks = detail::lower_gemm(op, cx); break;
    case OpKind::attention: ks = detail::lower_attention(op, cx); break;
    case OpKind::layernorm:
    case OpKind::rmsnorm:
    case OpKind::softmax: ks = detail::lower_rowwise(op, cx); break;
    default: ks = detail::lower_elementwise(op, cx); break;
  }
  const std::string precision = entry.precision
                                    ? fmt::format("precision {} from the policy (the op is {})", dtype_name(dtype), dtype_name(op.dtype))
                                    : fmt::format("precision {} (the op's own)", dtype_name(dtype));
  for (Kernel& k : ks) {
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
  CollectivePlan plan;
  std::string reason;
  switch (op.kind) {
    case OpKind::allreduce: {
      // A tree pays off across several switch hops (between nodes, as NCCL's double binary
      // tree); within one switch domain the libraries use ring or in-switch reduction.
      std::size_t max_hops = 0;
      for (std::size_t i = 0; i < cx.endpoints.size(); ++i) {
        for (std::size_t j = 0; j < cx.endpoints.size(); ++j) {
          max_hops = std::max(max_hops, machine_.route(cx.endpoints[i], cx.endpoints[j]).hops.size());
        }
      }
      std::vector<std::string> algos = {"ring", "in_switch"};
      if (max_hops > 2) algos.push_back("tree");
      if (entry.impl != "auto") algos = {entry.impl};
      double best = 0;
      for (const std::string& a : algos) {
        CollectivePlan p = a == "ring" ? detail::ring_allreduce(op, cx)
                                       : a == "tree" ? detail::tree_allreduce(op, cx) : detail::in_switch_allreduce(op, cx);
        if (p.algorithm.empty()) {
          if (entry.impl == "in_switch") {
            fail(machine_.name(), "in_switch all-reduce needs a switch with in_switch_reduction on every rank's "
                                  "route; none here (dgx_h100 and hgx_h200 have one)");
          }
          continue;
        }
        const double t = detail::estimate_allreduce_s(a, op, cx);
        if (plan.algorithm.empty() || t < best) {
          best = t;
          plan = std::move(p);
        }
      }
      reason = entry.impl == "auto" ? fmt::format("policy allreduce=auto: {} has the lowest alpha-beta estimate among "
                                                  "the algorithms this topology supports", plan.algorithm)
                                    : fmt::format("policy allreduce={}", entry.impl);
      break;
    }
    case OpKind::allgather:
      plan = detail::ring_allgather(op, cx);
      reason = "all-gather: ring";
      break;
    case OpKind::reducescatter:
      plan = detail::ring_reducescatter(op, cx);
      reason = "reduce-scatter: ring";
      break;
    default:
      plan = detail::direct_sendrecv(op, cx);
      reason = "send/recv: direct";
      break;
  }
  plan.why.insert(plan.why.begin(), reason);
  plan.why.push_back(fmt::format("{} ranks on {}; library step latency {} s, chunk {} B", devices.size(), machine_.name(),
                                 cx.library.step_latency_s, cx.library.chunk_bytes));
  return plan;
}

}  // namespace syntorch::runtime
