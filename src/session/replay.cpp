#include "syntorch/session/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <limits>
#include <queue>
#include <unordered_map>

#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/trace/chakra_workload.hpp"
#include "syntorch/trace/trace_file.hpp"

namespace syntorch::session {

namespace {

using trace::ChakraNode;
using trace::ChakraRank;
using trace::ChakraWorkload;

// Chakra's CollectiveCommType and the runtime's collective of the same traffic (a barrier is an
// all-reduce of one element, as NCCL runs it).
std::optional<runtime::OpKind> collective_kind(int comm_type) {
  switch (comm_type) {
    case 0: return runtime::OpKind::allreduce;
    case 1: return runtime::OpKind::reduce;
    case 2: return runtime::OpKind::allgather;
    case 5: return runtime::OpKind::broadcast;
    case 6: return runtime::OpKind::alltoall;
    case 7:
    case 8: return runtime::OpKind::reducescatter;
    case 9: return runtime::OpKind::allreduce;
    default: return std::nullopt;
  }
}

// A rank's nodes in the order they are issued: dependencies first, then by id.
std::vector<std::size_t> issue_order(const ChakraRank& r) {
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < r.nodes.size(); ++i) index.emplace(r.nodes[i].id, i);
  std::vector<std::size_t> waiting(r.nodes.size(), 0);
  std::vector<std::vector<std::size_t>> next(r.nodes.size());
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    for (std::uint64_t d : r.nodes[i].deps) {
      const std::size_t j = index.at(d);
      next[j].push_back(i);
      ++waiting[i];
    }
  }
  using Item = std::pair<std::uint64_t, std::size_t>;  // (id, index): smallest id first
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    if (waiting[i] == 0) ready.emplace(r.nodes[i].id, i);
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (std::size_t j : next[i]) {
      if (--waiting[j] == 0) ready.emplace(r.nodes[j].id, j);
    }
  }
  if (order.size() != r.nodes.size()) {
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      if (waiting[i] > 0) {
        throw trace::TraceFileError(fmt::format("'{}': node {} ({}) is in a dependency cycle", r.file.string(),
                                                r.nodes[i].id, r.nodes[i].name));
      }
    }
  }
  return order;
}

// The members of a node's group: its pg_name's, or every rank.
const std::vector<int>& members_of(const ChakraNode& n, const ChakraWorkload& w, const std::vector<int>& world) {
  if (n.pg_name.empty()) return world;
  return w.groups.at(n.pg_name);
}

const char* collective_name(int comm_type) {
  static constexpr const char* kNames[] = {"all-reduce", "reduce", "all-gather", "gather", "scatter", "broadcast",
                                           "all-to-all", "reduce-scatter", "reduce-scatter", "barrier"};
  return comm_type >= 0 && comm_type < 10 ? kNames[comm_type] : "collective";
}

// Every member of a group runs the same collectives in the same order, and every send has its
// receive (same peers, same bytes, in order): otherwise the ranks would wait for each other for
// ever. Refused here, naming the group or the pair.
void check_matching(const ChakraWorkload& w, const std::string& file) {
  Diagnostics d;
  const int world = static_cast<int>(w.ranks.size());
  // group name -> rank -> its collectives' types in issue order
  std::map<std::string, std::map<int, std::vector<int>>> calls;
  std::map<std::pair<int, int>, std::vector<std::uint64_t>> sends, recvs;  // (from, to) -> bytes in order
  for (const ChakraRank& r : w.ranks) {
    for (std::size_t i : issue_order(r)) {
      const ChakraNode& n = r.nodes[i];
      if (n.is_cpu_op) continue;
      if (n.type == ChakraNode::Type::collective) {
        const std::size_t members = n.pg_name.empty() ? w.ranks.size() : w.groups.at(n.pg_name).size();
        if (members >= 2) calls[n.pg_name][r.rank].push_back(n.comm_type);
      } else if (n.type == ChakraNode::Type::send) {
        sends[{r.rank, n.comm_dst}].push_back(n.comm_size);
      } else if (n.type == ChakraNode::Type::recv) {
        recvs[{n.comm_src, r.rank}].push_back(n.comm_size);
      }
    }
  }
  for (const auto& [group, by_rank] : calls) {
    std::vector<int> members;
    if (group.empty()) {
      for (int m = 0; m < world; ++m) members.push_back(m);
    } else {
      members = w.groups.at(group);
    }
    const std::vector<int> none;
    const auto of = [&](int m) -> const std::vector<int>& {
      const auto it = by_rank.find(m);
      return it == by_rank.end() ? none : it->second;
    };
    const std::vector<int>& first = of(members.front());
    for (int m : members) {
      const std::vector<int>& mine = of(m);
      if (mine == first) continue;
      std::size_t k = 0;
      while (k < mine.size() && k < first.size() && mine[k] == first[k]) ++k;
      d.error(file, group.empty() ? "all ranks" : "process group '" + group + "'",
              fmt::format("rank {} runs {} collectives and rank {} runs {}; they part at the {}th ({} on rank {}, {} on "
                          "rank {}): the ranks would wait for each other for ever",
                          members.front(), first.size(), m, mine.size(), k + 1,
                          k < first.size() ? collective_name(first[k]) : "none", members.front(),
                          k < mine.size() ? collective_name(mine[k]) : "none", m));
      break;
    }
  }
  std::set<std::pair<int, int>> pairs;
  for (const auto& [p, v] : sends) pairs.insert(p);
  for (const auto& [p, v] : recvs) pairs.insert(p);
  for (const auto& p : pairs) {
    const std::vector<std::uint64_t> s = sends.count(p) ? sends.at(p) : std::vector<std::uint64_t>{};
    const std::vector<std::uint64_t> r = recvs.count(p) ? recvs.at(p) : std::vector<std::uint64_t>{};
    if (s != r) {
      d.error(file, fmt::format("rank {} to rank {}", p.first, p.second),
              fmt::format("{} sends ({} bytes in all) against {} receives ({} bytes): every send needs its receive of "
                          "the same size, in order",
                          s.size(), std::accumulate(s.begin(), s.end(), std::uint64_t{0}), r.size(),
                          std::accumulate(r.begin(), r.end(), std::uint64_t{0})));
    }
  }
  if (!d.empty()) throw InputError(std::move(d));
}

// Everything a replay needs checked before any rank runs.
void check_workload(const ChakraWorkload& w, const hw::Machine& machine, const std::string& file) {
  Diagnostics d;
  const int world = static_cast<int>(w.ranks.size());
  if (world > static_cast<int>(machine.devices().size())) {
    d.error(file, "", fmt::format("the trace has {} ranks; the machine {} has {} devices", world, machine.name(),
                                  machine.devices().size()));
  }
  for (const ChakraRank& r : w.ranks) {
    const std::string where = r.file.string();
    for (const ChakraNode& n : r.nodes) {
      const std::string at = fmt::format("node {} ({})", n.id, n.name);
      if (n.type == ChakraNode::Type::collective) {
        if (!collective_kind(n.comm_type)) {
          d.error(where, at, fmt::format("comm_type {} is not a collective the replay runs (all-reduce, reduce, "
                                         "all-gather, broadcast, all-to-all, reduce-scatter, barrier)", n.comm_type));
        }
        if (!n.pg_name.empty()) {
          const auto g = w.groups.find(n.pg_name);
          if (g == w.groups.end()) {
            d.error(where, at, fmt::format("process group '{}' is not in the groups file{}", n.pg_name,
                                           w.groups_file.empty() ? " (none was found: --comm-groups FILE)"
                                                                 : " " + w.groups_file.string()));
          } else if (std::find(g->second.begin(), g->second.end(), r.rank) == g->second.end()) {
            d.error(where, at, fmt::format("rank {} is not a member of process group '{}'", r.rank, n.pg_name));
          } else {
            for (int m : g->second) {
              if (m >= world) d.error(where, at, fmt::format("group '{}' names rank {}, past the trace's {}", n.pg_name, m, world));
            }
          }
        }
      } else if (n.type == ChakraNode::Type::send || n.type == ChakraNode::Type::recv) {
        const int peer = n.type == ChakraNode::Type::send ? n.comm_dst : n.comm_src;
        if (peer < 0 || peer >= world || peer == r.rank) {
          d.error(where, at, fmt::format("{} peer {} is not another rank of the trace's {}",
                                         n.type == ChakraNode::Type::send ? "comm_dst" : "comm_src", peer, world));
        }
      }
    }
  }
  for (const auto& [name, ranks] : w.groups) {
    for (int m : ranks) {
      if (m >= world) {
        d.error(w.groups_file.string(), "/" + name, fmt::format("names rank {}, past the trace's {} ranks", m, world));
      }
    }
  }
  if (!d.empty()) throw InputError(std::move(d));
  check_matching(w, file);
}

// One rank's program: its nodes issued in dependency order on a stream per kind of work.
class RankReplay {
 public:
  RankReplay(const ChakraWorkload& w, const ChakraRank& r) : w_(w), r_(r) {}

  void run(runtime::RankContext& ctx) {
    std::vector<int> world(w_.ranks.size());
    for (std::size_t i = 0; i < world.size(); ++i) world[i] = static_cast<int>(i);
    // Every group this rank is in, registered in the same order on every member.
    std::map<std::string, runtime::GroupId> groups;
    const runtime::GroupId all = ctx.new_group(world);
    for (const auto& [name, ranks] : w_.groups) {
      if (std::find(ranks.begin(), ranks.end(), r_.rank) != ranks.end()) groups.emplace(name, ctx.new_group(ranks));
    }
    const std::uint32_t compute = ctx.current_stream();
    const std::uint32_t coll = ctx.new_stream();
    const std::uint32_t p2p = ctx.new_stream();
    std::unordered_map<std::uint64_t, std::size_t> index;
    for (std::size_t i = 0; i < r_.nodes.size(); ++i) index.emplace(r_.nodes[i].id, i);
    constexpr std::uint32_t kHost = std::numeric_limits<std::uint32_t>::max();
    const std::vector<std::size_t> order = issue_order(r_);
    // Streams: compute nodes on the compute stream, host (CPU) nodes on the host, communication on a
    // stream of its own kind, except a collective or transfer that a chain of compute runs
    // through (it waits for the compute stream's last node and the next compute node waits for it):
    // that one stays in the compute stream, as NCCL calls on the default stream do.
    std::vector<std::uint32_t> stream_of(r_.nodes.size(), compute);
    {
      std::size_t last_compute = SIZE_MAX;
      for (std::size_t p = 0; p < order.size(); ++p) {
        const std::size_t i = order[p];
        const ChakraNode& n = r_.nodes[i];
        if (n.is_cpu_op) {
          stream_of[i] = kHost;
          continue;
        }
        const bool comm = n.type == ChakraNode::Type::collective || n.type == ChakraNode::Type::send ||
                          n.type == ChakraNode::Type::recv;
        if (!comm) {
          last_compute = i;
          continue;
        }
        stream_of[i] = n.type == ChakraNode::Type::collective ? coll : p2p;
        const bool after_compute = last_compute != SIZE_MAX && std::find(n.deps.begin(), n.deps.end(),
                                                                         r_.nodes[last_compute].id) != n.deps.end();
        if (!after_compute) continue;
        for (std::size_t q = p + 1; q < order.size(); ++q) {
          const ChakraNode& m = r_.nodes[order[q]];
          const bool m_comm = m.is_cpu_op || m.type == ChakraNode::Type::collective ||
                              m.type == ChakraNode::Type::send || m.type == ChakraNode::Type::recv;
          if (m_comm) continue;
          if (std::find(m.deps.begin(), m.deps.end(), n.id) != m.deps.end()) {
            stream_of[i] = compute;
            last_compute = i;
          }
          break;
        }
      }
    }
    // An event only where a node on another stream (or the host) waits for it.
    std::vector<char> needs_event(r_.nodes.size(), 0);
    for (std::size_t i = 0; i < r_.nodes.size(); ++i) {
      for (std::uint64_t d : r_.nodes[i].deps) {
        const std::size_t j = index.at(d);
        if (stream_of[j] != stream_of[i] && stream_of[j] != kHost) needs_event[j] = 1;
      }
    }
    std::vector<std::uint64_t> event_of(r_.nodes.size(), 0);
    for (std::size_t i : order) {
      const ChakraNode& n = r_.nodes[i];
      const std::uint32_t s = stream_of[i];
      for (std::uint64_t d : n.deps) {
        const std::size_t j = index.at(d);
        if (stream_of[j] == s || stream_of[j] == kHost) continue;  // stream order, or host order
        if (s == kHost) {
          ctx.synchronize_event(event_of[j]);  // the host waits for the device work it depends on
        } else {
          ctx.wait_event(s, event_of[j]);
        }
      }
      if (s == kHost) {
        ctx.sleep_until_s(ctx.host_time_s() + static_cast<double>(n.duration_us) * 1e-6);
        continue;
      }
      ctx.set_stream(s);
      switch (n.type) {
        case ChakraNode::Type::collective: {
          const std::vector<int>& members = members_of(n, w_, world);
          if (members.size() < 2) break;  // nothing to move, as NCCL
          runtime::OpDesc op;
          op.kind = *collective_kind(n.comm_type);
          op.ranks = members.size();
          op.bytes = n.comm_type == 9 ? 4 : std::max<std::uint64_t>(n.comm_size, 1);
          ctx.collective(op, n.pg_name.empty() ? all : groups.at(n.pg_name), n.name);
          break;
        }
        case ChakraNode::Type::send: ctx.send(n.comm_dst, n.comm_size, n.name); break;
        case ChakraNode::Type::recv: ctx.recv(n.comm_src, n.comm_size, n.name); break;
        default: {
          torch::cuda::replay_kernel(static_cast<double>(n.duration_us) * 1e-6, n.num_ops, n.tensor_size,
                                     n.name.empty() ? std::string_view("replay") : std::string_view(n.name));
        }
      }
      if (needs_event[i]) event_of[i] = ctx.record_event(s);
    }
    ctx.set_stream(compute);
    ctx.synchronize("end of trace");
  }

 private:
  const ChakraWorkload& w_;
  const ChakraRank& r_;
};

}  // namespace

ReplayReport simulate_replay(const ReplayOptions& options) {
  ChakraWorkload w;
  try {
    w = trace::read_chakra_workload(options.workload, options.comm_groups);
  } catch (const trace::TraceFileError& e) {
    Diagnostics d;
    d.error(options.workload, "", e.what());
    throw InputError(std::move(d));
  }
  Run run(options.run);
  for (const ChakraRank& r : w.ranks) {
    try {
      static_cast<void>(issue_order(r));
    } catch (const trace::TraceFileError& e) {
      Diagnostics d;
      d.error(options.workload, "", e.what());
      throw InputError(std::move(d));
    }
  }
  check_workload(w, run.machine(), options.workload);
  ReplayReport report;
  report.ranks = static_cast<int>(w.ranks.size());
  std::uint64_t first_us = std::numeric_limits<std::uint64_t>::max(), last_us = 0;
  for (const ChakraRank& r : w.ranks) {
    for (const ChakraNode& n : r.nodes) {
      const char* kind = n.is_cpu_op                                  ? "cpu"
                         : n.type == ChakraNode::Type::compute        ? "compute"
                         : n.type == ChakraNode::Type::collective     ? "collective"
                         : n.type == ChakraNode::Type::send           ? "send"
                         : n.type == ChakraNode::Type::recv           ? "recv"
                                                                      : "other";
      ++report.nodes[kind];
      if (n.type == ChakraNode::Type::compute && !n.is_cpu_op) {
        report.recorded_compute_s += static_cast<double>(n.duration_us) * 1e-6;
      }
      first_us = std::min(first_us, n.start_us);
      last_us = std::max(last_us, n.start_us + n.duration_us);  // each at most a year: no overflow
    }
  }
  report.recorded_span_s = last_us > first_us ? static_cast<double>(last_us - first_us) * 1e-6 : 0.0;
  std::vector<RankReplay> programs;
  for (const ChakraRank& r : w.ranks) programs.emplace_back(w, r);
  try {
    report.stats = run.run_programs(report.ranks, [&](int rank) {
      programs[static_cast<std::size_t>(rank)].run(*runtime::current_rank());
    }, false);
  } catch (const std::logic_error& e) {  // ranks left waiting for each other: the trace's, not ours
    Diagnostics d;
    d.error(options.workload, "", fmt::format("the ranks' communication does not match: {}", e.what()));
    throw InputError(std::move(d));
  }
  return report;
}

nlohmann::ordered_json replay_report_json(const ReplayReport& r, const std::string& workload) {
  const RunStats& s = r.stats;
  nlohmann::ordered_json j;
  j["status"] = s.oom ? "oom" : "ok";
  j["workload"] = workload;
  j["ranks"] = r.ranks;
  j["machine"] = s.machine;
  j["device"] = s.device;
  j["simulated_time_s"] = s.simulated_time_s;
  j["recorded_span_s"] = r.recorded_span_s;
  j["recorded_compute_s"] = r.recorded_compute_s;
  j["nodes"] = r.nodes;
  j["kernels"] = s.kernels;
  j["flops"] = s.flops;
  j["events"] = s.events;
  return j;
}

}  // namespace syntorch::session
