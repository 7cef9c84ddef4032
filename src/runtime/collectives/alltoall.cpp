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

#include "collectives.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

double route_bandwidth(const CollectiveContext& cx, std::uint32_t from, std::uint32_t to) {
  double bw = sim::kUnlimitedRate;
  for (const hw::Hop& h : cx.machine.route(cx.endpoints[from], cx.endpoints[to]).hops) {
    const hw::Link& l = cx.machine.links()[h.link];
    bw = std::min(bw, l.bandwidth_bytes_per_s * l.efficiency);
  }
  return bw;
}

// One message: `bytes` from rank `from` to rank `to`, pipelined in chunks. Returns the index of
// its first chunk; chunk c of it is first + c.
struct Message {
  std::uint32_t from, to;
  double bytes;
};

class PlanBuilder {
 public:
  explicit PlanBuilder(const CollectiveContext& cx) : cx_(cx) {}

  // Adds a message whose chunk c waits for chunk c of each of `after` (earlier messages' first
  // chunk indices, with their chunk counts). Returns its first chunk index and chunk count.
  std::pair<std::uint32_t, std::uint32_t> add(const Message& m, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& after) {
    const auto k = static_cast<std::uint32_t>(chunks_for(m.bytes, cx_.library));
    const auto first = static_cast<std::uint32_t>(plan.transfers.size());
    const double cap = channel_cap(m.bytes, cx_.library);
    for (std::uint32_t c = 0; c < k; ++c) {
      Transfer t;
      t.src_endpoint = cx_.endpoints[m.from];
      t.dst_endpoint = cx_.endpoints[m.to];
      t.bytes = m.bytes / k;
      t.rate_cap_bytes_per_s = cap;
      if (c > 0) t.deps.push_back(first + c - 1);  // chunks leave in order
      for (const auto& [dep_first, dep_chunks] : after) {
        // Chunk c waits for the proportional chunk of what it forwards or follows.
        t.deps.push_back(dep_first + std::min(dep_chunks - 1, c * dep_chunks / k));
      }
      plan.transfers.push_back(std::move(t));
    }
    return {first, k};
  }

  CollectivePlan plan;

 private:
  const CollectiveContext& cx_;
};

// The ranks grouped into nodes: ranks joined by the topology's fastest tier of routes. Empty
// when the grouping is not a clean partition into equal nodes.
std::vector<std::vector<std::uint32_t>> nodes_of(const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  double fastest = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (i != j) fastest = std::max(fastest, route_bandwidth(cx, i, j));
    }
  }
  auto near = [&](std::uint32_t i, std::uint32_t j) { return route_bandwidth(cx, i, j) >= 0.999 * fastest; };
  std::vector<std::vector<std::uint32_t>> nodes;
  std::vector<bool> placed(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (placed[i]) continue;
    std::vector<std::uint32_t> node{i};
    placed[i] = true;
    for (std::uint32_t j = i + 1; j < n; ++j) {
      if (!placed[j] && near(i, j)) {
        node.push_back(j);
        placed[j] = true;
      }
    }
    nodes.push_back(std::move(node));
  }
  for (const auto& node : nodes) {
    if (node.size() != nodes.front().size()) return {};
    for (std::uint32_t a : node) {
      for (std::uint32_t b : node) {
        if (a != b && !near(a, b)) return {};
      }
    }
  }
  return nodes;
}

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
  // What `from` sends to others.
  double sent(std::uint32_t from) const {
    double s = 0;
    for (std::uint32_t to = 0; to < n_; ++to) s += to == from ? 0 : (*this)(from, to);
    return s;
  }

 private:
  std::uint64_t n_;
  std::vector<std::uint64_t> bytes_;
};

double message_s(const CollectiveContext& cx, std::uint32_t from, std::uint32_t to, double bytes) {
  if (bytes <= 0) return 0;
  const double bw = std::min(route_bandwidth(cx, from, to), channel_cap(bytes, cx.library));
  return bytes / bw;
}

double round_latency_s(const CollectiveContext& cx, std::uint32_t from, std::uint32_t to) {
  return cx.library.step_latency_s + cx.machine.route(cx.endpoints[from], cx.endpoints[to]).latency_s;
}

}  // namespace

std::optional<CollectivePlan> pairwise_alltoall(const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const Traffic s(op);
  PlanBuilder b(cx);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> last(n, {0, 0});
  std::vector<bool> sent(n, false);
  double lo = 0, hi = 0;
  for (std::uint32_t r = 1; r < n; ++r) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t to = (i + r) % n;
      lo = r == 1 && i == 0 ? s(i, to) : std::min(lo, s(i, to));
      hi = std::max(hi, s(i, to));
      if (s(i, to) <= 0) continue;
      std::vector<std::pair<std::uint32_t, std::uint32_t>> after;
      if (sent[i]) after.push_back(last[i]);  // a rank's rounds follow one another
      last[i] = b.add({i, to, s(i, to)}, after);
      sent[i] = true;
    }
  }
  b.plan.algorithm = "pairwise";
  b.plan.step_latency_s = cx.library.step_latency_s;
  for (std::uint32_t i = 0; i < n; ++i) b.plan.bytes_per_rank = std::max(b.plan.bytes_per_rank, s.sent(i));
  b.plan.why.push_back(fmt::format("pairwise: {} rounds, each rank sending one message per round ({}..{} per peer)",
                                   n - 1, units::format_size(lo), units::format_size(hi)));
  return std::move(b.plan);
}

std::optional<CollectivePlan> hierarchical_alltoall(const OpDesc& op, const CollectiveContext& cx) {
  const std::vector<std::vector<std::uint32_t>> nodes = nodes_of(cx);
  if (nodes.size() < 2 || nodes.front().size() < 2) return std::nullopt;
  const auto nn = static_cast<std::uint32_t>(nodes.size());
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  const Traffic s(op);
  PlanBuilder b(cx);
  // Phase 1, within each node: (N, l) sends (N, m) what it sends to every rank of local index m;
  // received[rank] lists the messages that rank receives in phase 1.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> received(cx.endpoints.size());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> last(cx.endpoints.size(), {0, 0});
  std::vector<bool> sent(cx.endpoints.size(), false);
  double intra_max = 0, inter_max = 0;
  for (std::uint32_t r = 1; r < local; ++r) {
    for (const auto& node : nodes) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t m = (l + r) % local;
        const std::uint32_t from = node[l], to = node[m];
        double bytes = 0;
        for (const auto& other : nodes) bytes += s(from, other[m]);
        intra_max = std::max(intra_max, bytes);
        if (bytes <= 0) continue;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> after;
        if (sent[from]) after.push_back(last[from]);
        last[from] = b.add({from, to, bytes}, after);
        sent[from] = true;
        received[to].push_back(last[from]);
      }
    }
  }
  // Phase 2, along each rail: (N, l) sends (M, l) what its whole node sends to (M, l).
  auto node_to = [&](const std::vector<std::uint32_t>& node, std::uint32_t to) {
    double bytes = 0;
    for (std::uint32_t from : node) bytes += s(from, to);
    return bytes;
  };
  for (std::uint32_t r = 1; r < nn; ++r) {
    for (std::uint32_t ni = 0; ni < nn; ++ni) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t from = nodes[ni][l], to = nodes[(ni + r) % nn][l];
        const double bytes = node_to(nodes[ni], to);
        inter_max = std::max(inter_max, bytes);
        if (bytes <= 0) continue;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> after = received[from];  // forwarded data in first
        if (sent[from]) after.push_back(last[from]);
        last[from] = b.add({from, to, bytes}, after);
        sent[from] = true;
      }
    }
  }
  b.plan.algorithm = "hierarchical";
  b.plan.step_latency_s = cx.library.step_latency_s;
  for (const auto& node : nodes) {
    for (std::uint32_t l = 0; l < local; ++l) {
      double out = 0;
      for (std::uint32_t m = 0; m < local; ++m) {
        for (const auto& other : nodes) out += m == l ? 0 : s(node[l], other[m]);
      }
      for (const auto& other : nodes) out += &other == &node ? 0 : node_to(node, other[l]);
      b.plan.bytes_per_rank = std::max(b.plan.bytes_per_rank, out);
    }
  }
  b.plan.why.push_back(fmt::format("hierarchical: {} nodes of {} ranks (by the topology's fastest routes); {} rounds "
                                   "within nodes (up to {} per message), then {} along rails between them (up to {})",
                                   nn, local, local - 1, units::format_size(intra_max), nn - 1,
                                   units::format_size(inter_max)));
  return std::move(b.plan);
}

double estimate_alltoall_s(const std::string& algorithm, const OpDesc& op, const CollectiveContext& cx) {
  const auto n = static_cast<std::uint32_t>(cx.endpoints.size());
  const Traffic s(op);
  double total = 0;
  if (algorithm == "pairwise") {
    for (std::uint32_t r = 1; r < n; ++r) {
      double round = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t to = (i + r) % n;
        round = std::max(round, round_latency_s(cx, i, to) + message_s(cx, i, to, s(i, to)));
      }
      total += round;
    }
    return total;
  }
  const auto nodes = nodes_of(cx);
  if (nodes.size() < 2) return 0;
  const auto local = static_cast<std::uint32_t>(nodes.front().size());
  for (std::uint32_t r = 1; r < local; ++r) {
    double round = 0;
    for (const auto& node : nodes) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t m = (l + r) % local;
        double bytes = 0;
        for (const auto& other : nodes) bytes += s(node[l], other[m]);
        round = std::max(round, round_latency_s(cx, node[l], node[m]) + message_s(cx, node[l], node[m], bytes));
      }
    }
    total += round;
  }
  for (std::uint32_t r = 1; r < nodes.size(); ++r) {
    double round = 0;
    for (std::size_t ni = 0; ni < nodes.size(); ++ni) {
      for (std::uint32_t l = 0; l < local; ++l) {
        const std::uint32_t from = nodes[ni][l], to = nodes[(ni + r) % nodes.size()][l];
        double bytes = 0;
        for (std::uint32_t peer : nodes[ni]) bytes += s(peer, to);
        round = std::max(round, round_latency_s(cx, from, to) + message_s(cx, from, to, bytes));
      }
    }
    total += round;
  }
  return total;
}

}  // namespace syntorch::runtime::detail
