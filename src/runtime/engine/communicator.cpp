// Process groups, rendezvous and fluid collectives; a rank's communication stream items.

#include "communicator.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "rank.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

// ---- groups ----

GroupId Communicator::new_group(const std::vector<int>& ranks) {
  std::lock_guard lock(groups_mutex_);
  if (ranks.empty()) throw std::invalid_argument("new_group: a group needs at least one rank");
  for (int r : ranks) {
    if (r < 0 || r >= core_.world_size) {
      throw std::invalid_argument(fmt::format("new_group: rank {} is outside 0..{}", r, core_.world_size - 1));
    }
  }
  auto it = group_ids_.find(ranks);
  if (it != group_ids_.end()) return GroupId{it->second};
  if (groups_.size() >= 0xfffff) throw std::invalid_argument("new_group: too many groups");
  auto g = std::make_unique<Group>();
  g->ranks = ranks;
  std::vector<std::string> parts;
  for (int r : ranks) {
    g->devices.push_back(static_cast<std::uint32_t>(r));
    parts.push_back(std::to_string(r));
  }
  g->name = fmt::format("ranks {}", fmt::join(parts, ","));
  groups_.push_back(std::move(g));
  const auto id = static_cast<std::uint32_t>(groups_.size() - 1);
  group_ids_.emplace(ranks, id);
  return GroupId{id};
}

const Group& Communicator::group(GroupId id) {
  std::lock_guard lock(groups_mutex_);
  if (id.value >= groups_.size()) throw std::invalid_argument(fmt::format("unknown process group {}", id.value));
  return *groups_[id.value];
}

// ---- rendezvous ----

Communicator::Rendezvous& Communicator::rendezvous_for_group(std::uint32_t group_id) {
  auto it = group_rendezvous_.find(group_id);
  if (it != group_rendezvous_.end()) return it->second;
  Rendezvous r;  // filed once complete: a refused group leaves nothing half-built behind
  const Group& g = group(GroupId{group_id});  // under the lock: programs may still be adding groups
  r.devices = g.devices;
  r.ranks = g.ranks;
  r.members = fmt::format("{}", fmt::join(g.ranks, ","));
  r.calls.assign(g.ranks.size(), 0);
  if (!core_.options.mirror_of.empty()) {
    r.followers.resize(g.ranks.size());
    for (std::size_t p = 0; p < g.ranks.size(); ++p) {
      if (!core_.mirrored(g.ranks[p])) continue;
      const int rep = core_.options.mirror_of[static_cast<std::size_t>(g.ranks[p])];
      const auto at = std::find(g.ranks.begin(), g.ranks.end(), rep);
      if (at == g.ranks.end()) {
        throw std::invalid_argument(fmt::format("group {} has rank {}, which mirrors rank {} outside the group: only "
                                                "identical replicas can be simulated once",
                                                g.name, g.ranks[p], rep));
      }
      r.followers[static_cast<std::size_t>(at - g.ranks.begin())].push_back(p);
    }
  }
  return group_rendezvous_.emplace(group_id, std::move(r)).first->second;
}

Communicator::Rendezvous& Communicator::rendezvous_for_pair(int src, int dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
  auto it = pair_rendezvous_.find(key);
  if (it != pair_rendezvous_.end()) return it->second;
  Rendezvous& r = pair_rendezvous_[key];
  r.ranks = {src, dst};
  r.members = fmt::format("{},{}", src, dst);
  r.devices = {static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst)};
  r.calls.assign(2, 0);
  return r;
}

void Communicator::arrive(Rank& rank, const CommCall& call, std::uint32_t stream) {
  Rendezvous* rv;
  std::size_t position;
  if (call.kind != CommCall::Kind::collective) {
    const bool send = call.kind == CommCall::Kind::send;
    const int peer = static_cast<int>(call.target);
    rv = &rendezvous_for_pair(send ? rank.index() : peer, send ? peer : rank.index());
    position = send ? 0 : 1;
  } else {
    rv = &rendezvous_for_group(call.target);
    position = static_cast<std::size_t>(std::find(rv->ranks.begin(), rv->ranks.end(), rank.index()) - rv->ranks.begin());
  }
  const std::uint64_t number = join(*rv, position, Member{&rank, stream, &call}, call);
  if (!rv->followers.empty()) {
    for (std::size_t f : rv->followers[position]) join(*rv, f, Member{nullptr, stream, &call}, call);
  }
  Meeting& m = rv->meetings[number - rv->first];
  if (m.arrived < rv->ranks.size()) return;
  // Everyone is here (meetings complete in order per participant, so this is the front one).
  Meeting done = std::move(m);
  while (!rv->meetings.empty() && rv->meetings.front().arrived == rv->ranks.size()) {
    rv->meetings.pop_front();
    ++rv->first;
  }
  run(*rv, done.kind, done.bytes, std::move(done.members), number);
}

std::uint64_t Communicator::join(Rendezvous& rv, std::size_t position, const Member& member, const CommCall& call) {
  const std::uint64_t number = rv.calls[position]++;
  while (rv.first + rv.meetings.size() <= number) {
    Meeting m;
    if (!rv.spare.empty()) {  // no allocation per collective in the steady state
      m.members = std::move(rv.spare.back());
      rv.spare.pop_back();
    }
    m.members.assign(rv.ranks.size(), Member{});
    rv.meetings.push_back(std::move(m));
  }
  Meeting& m = rv.meetings[number - rv.first];
  if (m.arrived == 0) {
    m.bytes = call.bytes;
    m.kind = call.op;
  } else if (m.kind != call.op || (m.bytes != call.bytes && call.op != OpKind::alltoall)) {
    throw std::logic_error(fmt::format("rank {} joined {} call {} of ranks {} with {} {} bytes; others with {} {} bytes",
                                       rv.ranks[position], op_name(call.op), number, fmt::join(rv.ranks, ","),
                                       op_name(call.op), call.bytes, op_name(m.kind), m.bytes));
  }
  m.members[position] = member;
  ++m.arrived;
  return number;
}

// ---- fluid collectives ----

const Communicator::Fluid& Communicator::fluid_for(const Rendezvous& rv, OpKind kind, std::uint64_t bytes,
                                                   const std::vector<std::uint64_t>& splits) {
  // Rendezvous live as long as the engine and stand for their participants.
  auto it = fluids_.find(FluidKey{&rv, static_cast<std::uint32_t>(kind), bytes, splits});
  if (it != fluids_.end()) return *it->second;
  OpDesc op;
  op.kind = kind;
  op.ranks = rv.devices.size();
  op.bytes = bytes;
  op.splits = splits;
  const CollectivePlan plan = core_.dispatcher.lower_collective(op, rv.devices);
  // The chunk-level plan alone on the scratch copy of the machine.
  if (!scratch_) scratch_ = std::make_unique<Scratch>(core_.machine);
  Scratch& s = *scratch_;
  const sim::TimePs start_ps = s.sim.now();
  s.executor.run_collective(plan, nullptr, nullptr, 0);
  s.sim.run();
  Fluid f;
  f.duration_ps = s.sim.now() - start_ps;
  f.devices = rv.devices;
  f.algorithm = plan.protocol == "simple" ? plan.algorithm : plan.algorithm + ":" + plan.protocol;
  std::vector<std::pair<double, sim::ResourceId>> loads;
  for (sim::ResourceId r = 0; r < s.hw.network().resource_count(); ++r) {
    const double b = s.hw.network().bytes_carried(r);
    if (b > 0) loads.emplace_back(b, r);
    s.hw.network().clear_bytes_carried(r);
  }
  std::sort(loads.begin(), loads.end(),
            [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (const auto& [load, r] : loads) {
    // Within 1% of a group's largest load: the same part (it then moves slightly more).
    if (f.parts.empty() || load < 0.99 * f.parts.back().bytes) f.parts.push_back({load, {}});
    f.parts.back().path.push_back(r);
  }
  for (auto& part : f.parts) std::sort(part.path.begin(), part.path.end());
  auto stored = std::make_unique<Fluid>(std::move(f));
  stored->matrix = splits;
  const FluidKey key{&rv, static_cast<std::uint32_t>(kind), bytes, stored->matrix};
  return *fluids_.emplace(key, std::move(stored)).first->second;
}

void Communicator::run(Rendezvous& rv, OpKind kind, std::uint64_t bytes, std::vector<Member> members,
                       std::uint64_t number) {
  matrix_.clear();
  if (kind == OpKind::alltoall) {
    // All-to-all (v): each member's row of the traffic matrix is its own shares; the plan takes
    // the whole matrix and the largest send as its size.
    bool even = true;
    for (const Member& m : members) even = even && m.call->splits.empty() && m.call->bytes == bytes;
    if (!even) {
      bytes = 0;
      for (const Member& m : members) {
        append_split_sizes(m.call->bytes, members.size(), m.call->splits, matrix_);
        bytes = std::max(bytes, m.call->bytes);
      }
    }
  }
  static const Fluid kNothing{.duration_ps = 0, .parts = {}, .devices = {}, .algorithm = "none", .matrix = {}};  // nobody sends
  const Fluid& f = bytes == 0 ? kNothing : fluid_for(rv, kind, bytes, matrix_);
  std::uint32_t slot = 0;
  while (slot < running_.size() && !running_[slot].free) ++slot;
  if (slot == running_.size()) running_.emplace_back();
  Running& r = running_[slot];
  r.free = false;
  r.members = std::move(members);
  r.rendezvous = &rv;
  r.fluid = &f;
  r.kind = kind;
  r.bytes = bytes;
  r.number = number;
  r.start_ps = core_.sim.now();
  for (std::uint32_t d : f.devices) core_.executor->share_device(d);
  if (f.parts.empty() || f.duration_ps == 0) {
    r.parts_left = 1;
    core_.sim.after<&Communicator::on_done>(f.duration_ps, this, slot);
    return;
  }
  r.parts_left = f.parts.size();
  for (const Fluid::Part& part : f.parts) {
    const double cap = part.bytes / units::ps_to_seconds(f.duration_ps);
    core_.hw->network().start(part.path, part.bytes, sim::handler<&Communicator::on_done>(), this, slot, cap);
  }
}

void Communicator::on_done(std::uint64_t slot) {
  Running& r = running_[slot];
  if (--r.parts_left > 0) return;
  const sim::TimePs now = core_.sim.now();
  std::vector<Member> members = std::move(r.members);
  r.members = {};
  r.free = true;
  if (core_.trace_device) trace_done(r, members, now);
  const bool p2p = r.kind == OpKind::sendrecv;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    if (m.rank == nullptr) continue;  // a mirrored rank: its representative's results stand for it
    Rank& rank = *m.rank;
    Rank::Slot& sl = rank.slot(m.stream);
    RankResult& result = rank.result();
    // Until everyone arrived: waiting for peers; then moving the data.
    result.waiting_ps += p2p ? 0 : r.start_ps - sl.comm_start_ps;
    sim::TimePs& bucket = p2p ? result.p2p_ps : m.stream == 0 ? result.communication_ps : result.side_communication_ps;
    bucket += now - (p2p ? sl.comm_start_ps : r.start_ps);
    result.device_finish_ps = now;
    ++result.collectives;
    sl.flow_id = 0;
    rank.end_item(m.stream, now);
    rank.stream(m.stream).finish_current();
    if (p2p && i == 1) rank.receive_done(now);
  }
  r.rendezvous->spare.push_back(std::move(members));
}

// Each member's span, and a flow through the members in the order they joined (their spans'
// begins; ties by position), so that every flow starts on a slice that begins no later than
// the ones it goes on to: trace viewers drop a flow whose end comes before its start.
void Communicator::trace_done(const Running& r, const std::vector<Member>& members, sim::TimePs now) {
  EngineTrace& tracer = *core_.tracer;
  const bool p2p = r.kind == OpKind::sendrecv;
  order_.clear();  // the members the trace shows
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].rank != nullptr && members[i].rank->tracer() != nullptr) order_.push_back(i);
  }
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    return members[a].rank->slot(members[a].stream).comm_start_ps < members[b].rank->slot(members[b].stream).comm_start_ps;
  });
  const std::uint64_t member_flow = order_.size() > 1 ? tracer.next_flow_id() : 0;  // none to draw alone
  for (std::size_t k = 0; k < order_.size(); ++k) {
    const std::size_t i = order_[k];
    const Member& m = members[i];
    Rank& rank = *m.rank;
    const Rank::Slot& sl = rank.slot(m.stream);
    const auto phase = k == 0 ? trace::FlowPhase::kBegin
                              : (k + 1 == order_.size() ? trace::FlowPhase::kEnd : trace::FlowPhase::kStep);
    if (p2p) {
      const trace::Arg args[] = {{"src", r.rendezvous->ranks[0]},
                                 {"dst", r.rendezvous->ranks[1]},
                                 {"tag", r.number},
                                 {"comm_bytes", r.bytes},
                                 {"algorithm", r.fluid->algorithm}};
      const std::uint64_t seq = tracer.device_span(rank.index(), m.stream, i == 0 ? "send" : "recv", "p2p",
                                                   sl.comm_start_ps, now, sl.flow_id, args, member_flow, phase,
                                                   sl.after_seq);
      rank.last_seq()[m.stream] = seq;
      if (i == 1) rank.recv_seqs().push_back(seq);
    } else {
      // What this member sent (an uneven all-to-all's members send different amounts).
      const trace::Arg args[] = {{"comm_type", op_name(r.kind)},
                                 {"comm_bytes", m.call->bytes},
                                 {"group", r.rendezvous->members},
                                 {"algorithm", r.fluid->algorithm}};
      rank.last_seq()[m.stream] = tracer.device_span(rank.index(), m.stream, op_name(r.kind), "collective",
                                                     sl.comm_start_ps, now, sl.flow_id, args, member_flow, phase);
    }
  }
}

// ---- a rank's communication stream items ----

void Rank::start_comm(const CommCall& call, os::Stream& stream) {
  const sim::TimePs now = core_.sim.now();
  slots_[stream.index()].comm_start_ps = now;
  slots_[stream.index()].flow_id = begin_item(stream.index(), now);
  core_.comm->arrive(*this, call, stream.index());
}

// A send reached on the compute stream: hand it to the send stream and go on.
void Rank::start_fork_send(const CommCall& call, os::Stream& stream) {
  const std::uint32_t send_stream = core_.streams.send;
  hand_over_flow(stream.index(), send_stream);
  streams_[send_stream]->enqueue(core_.sim.now(), os::work_item<&Rank::start_comm>(this, &call));
  stream.finish_current();
}

// On the compute stream: go on once receive number `receive` has arrived.
void Rank::start_join_recv(std::uint64_t receive, os::Stream& stream) {
  const sim::TimePs now = core_.sim.now();
  const std::uint64_t flow = begin_item(stream.index(), now);
  if (receive < recvs_done_) {
    trace_join(stream.index(), now, now, flow);
    end_item(stream.index(), now);
    stream.finish_current();
    return;
  }
  join_waiting_ = true;
  join_seq_ = receive;
  join_stream_ = stream.index();
  join_start_ps_ = now;
  join_flow_ = flow;
}

void Rank::receive_done(sim::TimePs now) {
  ++recvs_done_;
  if (!join_waiting_ || join_seq_ >= recvs_done_) return;
  join_waiting_ = false;
  result_.waiting_ps += now - join_start_ps_;
  trace_join(join_stream_, join_start_ps_, now, join_flow_);
  end_item(join_stream_, now);
  streams_[join_stream_]->finish_current();
}

}  // namespace syntorch::runtime::detail
