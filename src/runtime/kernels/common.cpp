#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"

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
  const std::uint64_t tiles = std::max<std::uint64_t>(k.tiles, 1);
  const std::uint64_t per_unit = std::max<std::uint32_t>(k.tiles_per_unit, 1);
  const std::uint64_t units = std::min<std::uint64_t>(d.compute.units, tiles);  // spread first
  const std::uint64_t slots = std::min<std::uint64_t>(tiles, units * per_unit);
  const std::uint64_t full = tiles / slots;
  const std::uint64_t rem = tiles % slots;
  const double unit_bw = d.compute.unit_bandwidth_bytes_per_s;
  auto bw = [&](std::uint64_t u) {
    const double hbm = hbm_bytes_per_s(d);
    return unit_bw > 0 ? std::min(hbm, unit_bw * static_cast<double>(u)) : hbm;
  };
  double t = d.compute.kernel_overhead_s;
  if (full > 0) {
    t += std::max(static_cast<double>(full * (slots / units)) * k.tile_compute_s,
                  static_cast<double>(full * slots) * k.tile_hbm_bytes / bw(units));
  }
  if (rem > 0) {
    const std::uint64_t busiest = (rem + units - 1) / units;
    t += std::max(static_cast<double>(busiest) * k.tile_compute_s,
                  static_cast<double>(rem) * k.tile_hbm_bytes / bw(std::min(rem, units)));
  }
  return t;
}

void unsupported(const LowerContext& cx, const std::string& what) {
  Diagnostics d;
  d.error(cx.device.name, "", what);
  throw InputError(std::move(d));
}

}  // namespace syntorch::runtime::detail
