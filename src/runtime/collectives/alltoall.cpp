// All-to-all: rank i sends M[i][j] bytes to rank j, M the traffic matrix (even, or the
// OpDesc's: a mixture-of-experts dispatch sends each rank what its experts were routed, the
// combine sends it back). Two algorithms:
//  - pairwise: n-1 rounds; in round r rank i sends to rank i+r (mod n) and receives from i-r, so
//    every rank sends and receives one message per round (the pairwise exchange of Thakur et
//    al., "Optimization of Collective Communication Operations in MPICH", 2005; the order NCCL's
//    peer-to-peer scheduler walks peers in). n-1 latencies; every message crosses its own route,
//    between nodes possibly off its rail.
//  - hierarchical: ranks on one node first exchange within it, so that each holds everything
//    its node sends to the ranks of its own local index; then ranks of one local index (a
//    rail) exchange between nodes, each message carrying the data of the whole node (the 2-D
//    hierarchical all-to-all of DeepSpeed-MoE and Tutel). (L-1) + (N-1) rounds for N nodes of L
//    ranks instead of N L - 1, and inter-node messages L times larger, rail-aligned. Nodes are
//    found from the topology: the ranks joined by its fastest tier of routes. Offered only when
//    the ranks span several such nodes with the same number on each.

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

// The traffic matrix in bytes, row-major by sender.
class Traffic {
 public:
  explicit Traffic(const OpDesc& op) : n_(op.ranks) {
    if (op.splits.empty()) {
      const std::vector<std::uint64_t> row = split_sizes(op.bytes, op.ranks, {});
      for (std::uint64_t i = 0; i < n_; ++i) bytes_.insert(bytes_.end(), row.begin(), row.end());
    } else {
      bytes_ = op.splits;
    }
  }
  double operator()(std::uint32_t from, std::uint32_t to) const { return static_cast<double>(bytes_[from * n_ + to]); }

 private:
  std::uint64_t n_;
  std::vector<std::uint64_t> bytes_;
};

// One message of a schedule, between ranks (positions in the collective).
struct Message {
  std::uint32_t from, to;
  double bytes;
};

// An all-to-all as rounds of messages: in each round a rank sends at most one message, after its
// previous one; from round `forwarding` on, a rank's messages carry data it received in the rounds
// before (so they wait for it, chunk by chunk).
struct Schedule {
  std::vector<std::vector<Message>> rounds;
  std::size_t forwarding = SIZE_MAX;
  std::string why;
};

Schedule pairwise_schedule(const OpDesc& op) {
  const auto n = static_cast<std::uint32_t>(op.ranks);
  const Traffic s(op);
  Schedule schedule;
  double lo_bytes = 0, hi_bytes = 0;
  for (std::uint32_t r = 1; r < n; ++r) {
    std::vector<Message>& round = schedule.rounds.emplace_back();
    for (std::uint32_t i = 0; i < n; ++i) {
      const Message m{i, (i + r) % n, s(i, (i + r) % n)};
      lo_bytes = r == 1 && i == 0 ? m.bytes : std::min(lo_bytes, m.bytes);
      hi_bytes = std::max(hi_bytes, m.bytes);
      if (m.bytes > 0) round.push_back(m);
    }
  }
  schedule.why = fmt::format("pairwise: {} rounds, each rank sending one message per round ({}..{} per peer)", n - 1,
                             units::format_size(lo_bytes), units::format_size(hi_bytes));
  return schedule;
}

std::optional<Schedule> hierarchical_schedule(const OpDesc& op, const CollectiveContext& cx) {
  const std::vector<std::vector<std::uint32_t>>& nodes = nodes_of(cx);
  if (nodes.size() < 2 || nodes.front().size() < 2) return std::nullopt;
  const auto node_count = static_cast<std::uint32_t>(nodes.size());
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  const Traffic s(op);
  Schedule schedule;
  double intra_bytes = 0, inter_bytes = 0;
  // Phase 1, within each node: (N, l) sends (N, m) what it sends to every rank of local index m.
  for (std::uint32_t r = 1; r < local; ++r) {
    std::vector<Message>& round = schedule.rounds.emplace_back();
    for (const auto& node : nodes) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t m = (l + r) % local;
        double bytes = 0;
        for (const auto& other : nodes) bytes += s(node[l], other[m]);
        intra_bytes = std::max(intra_bytes, bytes);
        if (bytes > 0) round.push_back({node[l], node[m], bytes});
      }
    }
  }
  // Phase 2, along each rail: (N, l) sends (M, l) what its whole node sends to (M, l).
  schedule.forwarding = schedule.rounds.size();
  for (std::uint32_t r = 1; r < node_count; ++r) {
    std::vector<Message>& round = schedule.rounds.emplace_back();
    for (std::uint32_t ni = 0; ni < node_count; ++ni) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t to = nodes[(ni + r) % node_count][l];
        double bytes = 0;
        for (std::uint32_t peer : nodes[ni]) bytes += s(peer, to);
        inter_bytes = std::max(inter_bytes, bytes);
        if (bytes > 0) round.push_back({nodes[ni][l], to, bytes});
      }
    }
  }
  schedule.why = fmt::format("hierarchical: {} nodes of {} ranks (by the topology's fastest routes); {} rounds within "
                             "nodes (up to {} per message), then {} along rails between them (up to {})",
                             node_count, local, local - 1, units::format_size(intra_bytes), node_count - 1,
                             units::format_size(inter_bytes));
  return schedule;
}

// The transfers of a schedule: each message in chunks that leave in order, chunk c after the
// (proportional) chunk of the rank's previous message and, when forwarding, of every message
// the rank received before.
CollectivePlan plan_of(const Schedule& schedule, const CollectiveContext& cx, std::string algorithm) {
  struct Sent {
    std::uint32_t first = 0, chunks = 0;
  };
  CollectivePlan plan;
  plan.algorithm = std::move(algorithm);
  plan.step_latency_s = cx.protocol.step_latency_s;
  const std::size_t n = cx.endpoints.size();
  std::vector<std::optional<Sent>> last(n);
  std::vector<std::vector<Sent>> received(n);
  std::vector<double> sent_bytes(n, 0);
  for (std::size_t r = 0; r < schedule.rounds.size(); ++r) {
    for (const Message& m : schedule.rounds[r]) {
      std::vector<Sent> after;
      if (last[m.from]) after.push_back(*last[m.from]);
      if (r >= schedule.forwarding) after.insert(after.end(), received[m.from].begin(), received[m.from].end());
      const auto k = static_cast<std::uint32_t>(chunks_for(m.bytes, cx.protocol));
      const Sent sent{static_cast<std::uint32_t>(plan.transfers.size()), k};
      const double cap = channel_cap(m.bytes, cx.protocol);
      for (std::uint32_t c = 0; c < k; ++c) {
        Transfer t;
        t.src_endpoint = cx.endpoints[m.from];
        t.dst_endpoint = cx.endpoints[m.to];
        t.bytes = m.bytes / k;
        t.rate_cap_bytes_per_s = cap;
        if (c > 0) t.deps.push_back(sent.first + c - 1);  // the channel's previous chunk
        for (const Sent& d : after) t.deps.push_back(d.first + std::min(d.chunks - 1, c * d.chunks / k));
        plan.transfers.push_back(std::move(t));
      }
      last[m.from] = sent;
      if (r < schedule.forwarding) received[m.to].push_back(sent);
      sent_bytes[m.from] += m.bytes;
    }
  }
  plan.bytes_per_rank = *std::max_element(sent_bytes.begin(), sent_bytes.end());
  plan.why.push_back(schedule.why);
  return plan;
}

// Alpha-beta: each round lasts as long as its slowest message alone (latency, then its bytes at
// the route's rate and the library's channels).
double estimate_s(const Schedule& schedule, const CollectiveContext& cx) {
  double total_s = 0;
  for (const auto& round : schedule.rounds) {
    double round_s = 0;
    for (const Message& m : round) {
      const double rate = std::min(route_bytes_per_s(cx, m.from, m.to), channel_cap(m.bytes, cx.protocol));
      const double latency_s = cx.protocol.step_latency_s + cx.machine.route(cx.endpoints[m.from], cx.endpoints[m.to]).latency_s;
      round_s = std::max(round_s, latency_s + m.bytes / rate);
    }
    total_s += round_s;
  }
  return total_s;
}

}  // namespace

std::optional<CollectivePlan> pairwise_alltoall(const OpDesc& op, const CollectiveContext& cx) {
  return plan_of(pairwise_schedule(op), cx, "pairwise");
}

std::optional<CollectivePlan> hierarchical_alltoall(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<Schedule> schedule = hierarchical_schedule(op, cx);
  if (!schedule) return std::nullopt;
  return plan_of(*schedule, cx, "hierarchical");
}

double estimate_pairwise_alltoall_s(const OpDesc& op, const CollectiveContext& cx) {
  return estimate_s(pairwise_schedule(op), cx);
}

double estimate_hierarchical_alltoall_s(const OpDesc& op, const CollectiveContext& cx) {
  const std::optional<Schedule> schedule = hierarchical_schedule(op, cx);
  return schedule ? estimate_s(*schedule, cx) : std::numeric_limits<double>::infinity();
}

}  // namespace syntorch::runtime::detail
