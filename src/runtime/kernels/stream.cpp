// Streaming kernels: one pass over a tensor's elements, as PyTorch's vectorised elementwise
// kernels run (a grid of CTAs, 4096 elements each, every byte read and written once from HBM),
// and the choice among implementations composed of them.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

namespace {
constexpr double kElementsPerTile = 4096;
}  // namespace

Kernel stream_kernel(const LowerContext& cx, const StreamPass& pass) {
  const hw::Device& d = cx.device;
  const double rate = unit_vector_ops_per_s(d, DType::fp32);
  if (rate == 0) unsupported(cx, "elementwise kernels need fp32 vector throughput (vector_ops_per_cycle.fp32)");
  Kernel k;
  k.device = cx.device_index;
  k.impl = "fused";
  k.name = std::string(pass.name);
  k.tiles_per_unit = d.compute.resident_tiles_per_unit;
  const double elements = std::max(1.0, pass.elements);
  k.tiles = static_cast<std::uint64_t>(std::ceil(elements / kElementsPerTile));
  k.tile_compute_s = std::min(elements, kElementsPerTile) * pass.ops_per_element / rate;
  k.hbm_bytes = elements * (pass.read_bytes_per_element + pass.write_bytes_per_element);
  k.hbm_write_bytes = elements * pass.write_bytes_per_element;
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  k.flops = elements * pass.ops_per_element;
  return k;
}

std::vector<Kernel> lower_elementwise(const OpDesc& op, const LowerContext& cx, ElementwiseCost cost) {
  const double e = element_bytes(cx.dtype);
  Kernel k = stream_kernel(cx, {op_name(op.kind), static_cast<double>(op.elements), e * cost.inputs, e * cost.outputs,
                                cost.ops_per_element});
  k.why.push_back(fmt::format("{} elements in {} CTAs of {}: read {} and write {} per element", op.elements, k.tiles,
                              kElementsPerTile, cost.inputs, cost.outputs));
  return {std::move(k)};
}

std::vector<Kernel> choose_implementation(std::vector<std::vector<Kernel>> options, const LowerContext& cx) {
  const std::string& impl = cx.policy.impl;
  std::vector<double> estimate_s(options.size(), 0);
  std::size_t best = options.size();
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (options[i].empty() || (impl != "auto" && options[i][0].impl != impl)) continue;
    for (const Kernel& k : options[i]) estimate_s[i] += detail::estimate_s(k, cx.device);
    if (best == options.size() || estimate_s[i] < estimate_s[best]) best = i;
  }
  if (best == options.size()) unsupported(cx, fmt::format("no implementation \"{}\" here", impl));
  std::string reason;
  if (impl == "auto" && options.size() > 1) {
    std::string others;
    for (std::size_t i = 0; i < options.size(); ++i) {
      if (i == best || options[i].empty()) continue;
      others += fmt::format("{}{} {:.1f} us", others.empty() ? "" : ", ", options[i][0].impl, estimate_s[i] * 1e6);
    }
    reason = fmt::format("auto: {} ({:.1f} us) is the fastest (others: {})", options[best][0].impl,
                         estimate_s[best] * 1e6, others);
  } else {
    reason = fmt::format("{}: as the policy asks", options[best][0].impl);
  }
  std::vector<Kernel> chosen = std::move(options[best]);
  chosen[0].why.insert(chosen[0].why.begin(), std::move(reason));
  return chosen;
}

}  // namespace syntorch::runtime::detail
