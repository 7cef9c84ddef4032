// Ring algorithms: all-reduce is a reduce-scatter (n-1 steps) then an all-gather (n-1 steps);
// each step every rank sends one segment of bytes/n to the next rank, so each rank sends
// 2(n-1)/n of the message (all-gather and reduce-scatter alone: (n-1)/n).

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

std::uint64_t chunks_for(double bytes, const hw::CollectiveProtocol& lib, std::uint64_t max_chunks) {
  if (lib.chunk_bytes <= 0) return 1;
  const double per_chunk = lib.chunk_bytes * lib.channels;
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(bytes / per_chunk)), 1, max_chunks);
}

double channel_cap(double bytes, const hw::CollectiveProtocol& lib) {
  if (lib.channel_bandwidth_bytes_per_s <= 0) return sim::kUnlimitedRate;
  const double wanted = lib.chunk_bytes > 0 ? std::ceil(bytes / lib.chunk_bytes) : lib.channels;
  return std::clamp(wanted, 1.0, static_cast<double>(lib.channels)) * lib.channel_bandwidth_bytes_per_s;
}

double ring_bandwidth(const CollectiveContext& cx) {
  double bw = sim::kUnlimitedRate;
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  for (std::uint32_t i = 0; i < n; ++i) bw = std::min(bw, route_bytes_per_s(cx, i, (i + 1) % n));
  return bw;
}

double ring_hop_latency(const CollectiveContext& cx) {
  double lat = 0;
  const std::size_t n = cx.endpoints.size();
  for (std::size_t i = 0; i < n; ++i) {
    lat = std::max(lat, cx.machine.route(cx.endpoints[i], cx.endpoints[(i + 1) % n]).latency_s);
  }
  return lat;
}

CollectivePlan ring(const CollectiveContext& cx, std::uint32_t steps, double segment_bytes, std::string name) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const auto k = static_cast<std::uint32_t>(chunks_for(segment_bytes, cx.protocol));
  CollectivePlan plan;
  plan.algorithm = std::move(name);
  plan.step_latency_s = cx.protocol.step_latency_s;
  plan.bytes_per_rank = steps * segment_bytes;
  plan.transfers.resize(static_cast<std::size_t>(steps) * n * k);
  auto id = [&](std::uint32_t s, std::uint32_t i, std::uint32_t j) { return (s * n + i) * k + j; };
  for (std::uint32_t s = 0; s < steps; ++s) {
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = 0; j < k; ++j) {
        Transfer& t = plan.transfers[id(s, i, j)];
        t.src_endpoint = cx.endpoints[i];
        t.dst_endpoint = cx.endpoints[(i + 1) % n];
        t.bytes = segment_bytes / k;
        t.rate_cap_bytes_per_s = channel_cap(segment_bytes, cx.protocol);
        if (s > 0) t.deps.push_back(id(s - 1, (i + n - 1) % n, j));  // the chunk this rank forwards
        if (j > 0) t.deps.push_back(id(s, i, j - 1));                // the channel's previous chunk
      }
    }
  }
  plan.why.push_back(fmt::format("{}: {} steps x {} ranks, segments of {} in {} pipelined chunk(s)", plan.algorithm,
                                 steps, n, units::format_size(segment_bytes), k));
  return plan;
}

std::optional<CollectivePlan> ring_allreduce(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, 2 * (n - 1), static_cast<double>(op.bytes) / n, "ring");
}

std::optional<CollectivePlan> ring_allgather(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, n - 1, static_cast<double>(op.bytes) / n, "ring");
}

std::optional<CollectivePlan> ring_reducescatter(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  return ring(cx, n - 1, static_cast<double>(op.bytes) / n, "ring");
}

namespace {
// `steps` steps of bytes/n per rank, each paying the step latency and the hop.
double estimate_ring_s(const OpDesc& op, const CollectiveContext& cx, double steps) {
  const double n = static_cast<double>(cx.endpoints.size());
  const double s = static_cast<double>(op.bytes);
  const double alpha = cx.protocol.step_latency_s + ring_hop_latency(cx);
  const double bw = payload_rate(cx, std::min(ring_bandwidth(cx), channel_cap(s / n, cx.protocol)));
  return steps * alpha + steps / n * s / bw;
}
}  // namespace

double estimate_ring_allreduce_s(const OpDesc& op, const CollectiveContext& cx) {
  return estimate_ring_s(op, cx, 2.0 * static_cast<double>(cx.endpoints.size() - 1));
}

double estimate_ring_gather_s(const OpDesc& op, const CollectiveContext& cx) {
  return estimate_ring_s(op, cx, static_cast<double>(cx.endpoints.size() - 1));
}

}  // namespace syntorch::runtime::detail
