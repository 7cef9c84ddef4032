#pragma once
// Process groups and communication between ranks. A collective (or a send/recv pair) starts when
// its last member reaches it on a stream (a rendezvous: calls are matched by their number in
// the group, and members that disagree on the op or size are an error). It then runs in fluid
// form: the first time a (group, op, size) occurs, its chunk-level plan is simulated alone on a
// scratch copy of the machine, which gives its duration and the bytes it puts on each link, HBM
// stack and library engine; every occurrence runs as flows over those resources, capped so that
// alone they end exactly when the plan does, sharing max-min fairly with whatever else runs.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core.hpp"
#include "syntorch/runtime/rank_context.hpp"

namespace syntorch::runtime::detail {

class Rank;
struct CommCall;

struct Group {
  std::vector<int> ranks;
  std::vector<std::uint32_t> devices;
  std::string name;
};

class Communicator {
 public:
  explicit Communicator(EngineCore& core) : core_(core) {}

  // Program threads: register a group (the same ranks give the same id), look one up.
  GroupId new_group(const std::vector<int>& ranks);
  const Group& group(GroupId id);

  // The simulator: `rank` reached `call` on `stream`.
  void arrive(Rank& rank, const CommCall& call, std::uint32_t stream);

 private:
  // A collective in fluid form: groups of resources that carry (about) the same bytes, each group
  // one flow of those bytes, capped so that alone it ends exactly when the chunk-level plan does.
  struct Fluid {
    struct Part {
      double bytes = 0;
      std::vector<sim::ResourceId> path;
    };
    sim::TimePs duration_ps = 0;
    std::vector<Part> parts;
    std::vector<std::uint32_t> devices;
    std::string algorithm;
    std::vector<std::uint64_t> matrix;  // the all-to-all traffic matrix its key views
  };
  struct Member {
    Rank* rank = nullptr;  // null: a mirrored rank (EngineOptions::mirror_of), joined with its representative
    std::uint32_t stream = 0;
    const CommCall* call = nullptr;  // what this member asked for (its all-to-all shares)
  };
  struct Meeting {
    std::uint32_t arrived = 0;
    std::uint64_t bytes = 0;
    OpKind kind = OpKind::allreduce;
    std::vector<Member> members;  // by position in the group (or sender, receiver)
  };
  struct Rendezvous {
    std::vector<std::uint32_t> devices;  // participants, in rank order
    std::vector<int> ranks;
    std::string members;                 // "0,1,2,3"
    std::vector<std::uint64_t> calls;    // calls so far per participant
    std::uint64_t first = 0;             // call number of meetings.front()
    std::deque<Meeting> meetings;
    std::vector<std::vector<Member>> spare;  // member lists of finished meetings, for reuse
    // By position: the positions of the mirrored members that join when this one does (empty
    // when the run mirrors nothing).
    std::vector<std::vector<std::size_t>> followers;
  };
  struct Running {
    std::vector<Member> members;
    std::size_t parts_left = 0;
    bool free = true;
    // What it is, for traces.
    Rendezvous* rendezvous = nullptr;
    const Fluid* fluid = nullptr;
    OpKind kind = OpKind::allreduce;
    std::uint64_t bytes = 0;
    std::uint64_t number = 0;  // the call's number in its rendezvous (the p2p tag)
    sim::TimePs start_ps = 0;  // when the last member arrived
  };

  Rendezvous& rendezvous_for_group(std::uint32_t group_id);
  Rendezvous& rendezvous_for_pair(int src, int dst);
  // Files `member` at `position`'s next call; returns the call's number.
  std::uint64_t join(Rendezvous& rv, std::size_t position, const Member& member, const CommCall& call);
  const Fluid& fluid_for(const Rendezvous& rv, OpKind kind, std::uint64_t bytes,
                         const std::vector<std::uint64_t>& splits);
  void run(Rendezvous& rv, OpKind kind, std::uint64_t bytes, std::vector<Member> members, std::uint64_t number);
  void on_done(std::uint64_t slot);
  void trace_done(const Running& r, const std::vector<Member>& members, sim::TimePs now);

  EngineCore& core_;
  std::mutex groups_mutex_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::map<std::vector<int>, std::uint32_t> group_ids_;
  std::unordered_map<std::uint32_t, Rendezvous> group_rendezvous_;
  std::unordered_map<std::uint64_t, Rendezvous> pair_rendezvous_;
  // Fluids by rendezvous, op, bytes and an all-to-all's traffic matrix (empty otherwise); looked
  // up by a view of the key, so a collective that was seen before allocates nothing.
  struct FluidKey {
    const Rendezvous* rendezvous;
    std::uint32_t kind;
    std::uint64_t bytes;
    std::span<const std::uint64_t> matrix;  // owned by the map's value (Fluid::matrix) once stored
  };
  struct FluidKeyLess {
    using is_transparent = void;
    bool operator()(const FluidKey& a, const FluidKey& b) const {
      if (std::tie(a.rendezvous, a.kind, a.bytes) != std::tie(b.rendezvous, b.kind, b.bytes)) {
        return std::tie(a.rendezvous, a.kind, a.bytes) < std::tie(b.rendezvous, b.kind, b.bytes);
      }
      return std::lexicographical_compare(a.matrix.begin(), a.matrix.end(), b.matrix.begin(), b.matrix.end());
    }
  };
  std::map<FluidKey, std::unique_ptr<Fluid>, FluidKeyLess> fluids_;
  // The copy of the machine each new collective is planned on alone: built at the first plan and
  // reused (a SuperPOD's takes longer to build than a plan takes to run). Its clock only moves
  // on, so a plan's duration is a difference; the bytes it put on each resource are cleared as
  // they are read.
  struct Scratch {
    explicit Scratch(const hw::Machine& machine) : hw(sim, machine), executor(hw) {}
    sim::Simulator sim;
    hw::SimMachine hw;
    Executor executor;
  };
  std::unique_ptr<Scratch> scratch_;
  std::vector<Running> running_;
  std::vector<std::size_t> order_;  // members by arrival, for traces (reused)
  std::vector<std::uint64_t> matrix_;  // an all-to-all's traffic matrix being assembled (reused)
};

}  // namespace syntorch::runtime::detail
