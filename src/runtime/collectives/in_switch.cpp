// In-switch all-reduce (NVLink SHARP, NCCL's NVLS): every rank sends its data into a switch that
// can reduce; the switch sums the contributions and multicasts the result back. Each rank's link
// carries the message once in each direction, instead of 2(n-1)/n of it twice over for a ring.
// Only where one switch on every rank's route supports in-switch reduction.

#include <algorithm>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

std::optional<CollectivePlan> in_switch_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const hw::Machine& m = cx.machine;
  // A reducing switch on the route from rank 0 to every other rank.
  std::vector<std::uint32_t> all(cx.endpoints.size());
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::optional<std::uint32_t> sw = reducing_switch(cx, all);
  if (!sw) return std::nullopt;  // no reducing switch on every route
  CollectivePlan plan;
  const std::uint32_t sw_ep = m.switches()[*sw].endpoint;
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const auto k = static_cast<std::uint32_t>(chunks_for(static_cast<double>(op.bytes), cx.library));
  const double chunk = static_cast<double>(op.bytes) / k;
  const double cap = channel_cap(static_cast<double>(op.bytes), cx.library);
  plan.algorithm = "in_switch";
  plan.step_latency_s = cx.library.step_latency_s;
  plan.bytes_per_rank = static_cast<double>(op.bytes);
  auto up = [&](std::uint32_t i, std::uint32_t j) { return j * 2 * n + i; };
  auto down = [&](std::uint32_t i, std::uint32_t j) { return j * 2 * n + n + i; };
  plan.transfers.resize(2 * static_cast<std::size_t>(n) * k);
  for (std::uint32_t j = 0; j < k; ++j) {
    for (std::uint32_t i = 0; i < n; ++i) {
      Transfer& u = plan.transfers[up(i, j)];
      u.src_endpoint = cx.endpoints[i];
      u.dst_endpoint = sw_ep;
      u.bytes = chunk;
      u.rate_cap_bytes_per_s = cap;
      if (j > 0) u.deps.push_back(up(i, j - 1));
      Transfer& d = plan.transfers[down(i, j)];
      d.src_endpoint = sw_ep;
      d.dst_endpoint = cx.endpoints[i];
      d.bytes = chunk;
      d.rate_cap_bytes_per_s = cap;
      for (std::uint32_t r = 0; r < n; ++r) d.deps.push_back(up(r, j));  // the sum needs every rank's chunk
      if (j > 0) d.deps.push_back(down(i, j - 1));
    }
  }
  plan.why.push_back(fmt::format("in_switch: {} reduces in the switch; {} chunk(s) of {} up and back per rank",
                                 m.switches()[*sw].name, k, units::format_size(chunk)));
  return plan;
}

// Up to the switch and back, once each way.
double estimate_in_switch_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  const double s = static_cast<double>(op.bytes);
  const double alpha = cx.library.step_latency_s + ring_hop_latency(cx);
  const double bw = std::min(ring_bandwidth(cx), channel_cap(s, cx.library));
  return 2 * alpha + s / bw;
}

}  // namespace syntorch::runtime::detail
