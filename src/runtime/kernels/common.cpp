#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"
#include "syntorch/runtime/executor.hpp"

namespace syntorch::runtime::detail {

double unit_matrix_ops_per_s(const hw::Device& d, DType t) {
  const auto it = d.compute.matrix_ops_per_cycle.find(t);
  if (it == d.compute.matrix_ops_per_cycle.end()) return 0;
  return it->second * d.compute.clock_hz * d.compute.matrix_efficiency;
}

double unit_vector_ops_per_s(const hw::Device& d, DType t) {
  const auto it = d.compute.vector_ops_per_cycle.find(t);
  if (it == d.compute.vector_ops_per_cycle.end()) return 0;
  return it->second * d.compute.clock_hz * d.compute.vector_efficiency;
}

double hbm_bytes_per_s(const hw::Device& d) { return d.memory.bandwidth_bytes_per_s * d.memory.efficiency; }

double estimate_s(const Kernel& k, const hw::Device& d) {
  const KernelPhases plan = plan_phases(k, d);
  double t = d.compute.kernel_overhead_s;
  for (int i = 0; i < plan.count; ++i) {
    const KernelPhases::Phase& p = plan.phases[i];
    t += std::max(p.compute_s, p.bytes / std::min(hbm_bytes_per_s(d), p.cap_bytes_per_s));
  }
  return t;
}

void unsupported(const LowerContext& cx, const std::string& what) {
  Diagnostics d;
  d.error(cx.device.name, "", what);
  throw InputError(std::move(d));
}

}  // namespace syntorch::runtime::detail
