#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>
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

double list_schedule_imbalance(std::span<const double> work, const Kernel& k, const hw::Device& d) {
  const std::uint64_t n = work.size();
  if (n == 0 || d.compute.units == 0) return 1;
  double total = 0, most = 0, least = work[0];
  for (double w : work) {
    total += w;
    most = std::max(most, w);
    least = std::min(least, w);
  }
  if (!(total > 0) || most == least) return 1;  // identical tiles: plan_phases' waves are exact
  const std::uint64_t per_unit = std::max<std::uint32_t>(k.tiles_per_unit, 1);
  const std::uint64_t units = std::min<std::uint64_t>(d.compute.units, n);
  // Each unit shares its rate evenly among the CTAs it holds (up to per_unit); a CTA that ends
  // frees its slot for the next one in dispatch order. Units advance lazily: `last` is the time
  // their CTAs' remaining work was last brought up to date.
  struct Unit {
    double last = 0;
    std::uint32_t held = 0;
    double left[8] = {};  // remaining work of the CTAs it holds
  };
  const std::uint64_t slots = std::min<std::uint64_t>(per_unit, 8);
  std::vector<Unit> unit(units);
  std::size_t next = 0;
  for (std::uint64_t r = 0; r < slots; ++r) {  // the first CTAs spread over the units first
    for (Unit& u : unit) {
      if (next < n) u.left[u.held++] = work[next++];
    }
  }
  const auto next_end = [](const Unit& u) {
    double least_left = u.left[0];
    for (std::uint32_t i = 1; i < u.held; ++i) least_left = std::min(least_left, u.left[i]);
    return u.last + least_left * static_cast<double>(u.held);
  };
  using Event = std::pair<double, std::uint64_t>;  // (time, unit)
  std::vector<Event> events;
  events.reserve(units);
  for (std::uint64_t i = 0; i < units; ++i) {
    if (unit[i].held) events.emplace_back(next_end(unit[i]), i);
  }
  const auto later = std::greater<Event>();
  std::make_heap(events.begin(), events.end(), later);
  double makespan = 0;
  while (!events.empty()) {
    std::pop_heap(events.begin(), events.end(), later);
    const auto [now, i] = events.back();
    events.pop_back();
    Unit& u = unit[i];
    // The CTA with the least left ends (it is removed whatever rounding does to the others, so
    // every event retires at least one); the others have done as much.
    std::uint32_t ending = 0;
    for (std::uint32_t j = 1; j < u.held; ++j) {
      if (u.left[j] < u.left[ending]) ending = j;
    }
    const double done = u.left[ending];
    u.last = now;
    std::uint32_t kept = 0;
    for (std::uint32_t j = 0; j < u.held; ++j) {
      const double left = u.left[j] - done;
      if (j != ending && left > 0) u.left[kept++] = left;
    }
    u.held = kept;
    while (u.held < slots && next < n) u.left[u.held++] = work[next++];
    makespan = std::max(makespan, now);
    if (u.held) {
      events.emplace_back(next_end(u), i);
      std::push_heap(events.begin(), events.end(), later);
    }
  }
  // What plan_phases gives identical tiles of the average work, in the same units.
  Kernel even;
  even.tiles = n;
  even.tiles_per_unit = static_cast<std::uint32_t>(slots);
  even.tile_compute_s = total / static_cast<double>(n);
  const KernelPhases plan = plan_phases(even, d);
  double planned = 0;
  for (int p = 0; p < plan.count; ++p) planned += plan.phases[p].compute_s;
  return std::max(1.0, makespan / planned);
}

void unsupported(const LowerContext& cx, const std::string& what) {
  Diagnostics d;
  d.error(cx.device.name, "", what);
  throw InputError(std::move(d));
}

}  // namespace syntorch::runtime::detail
