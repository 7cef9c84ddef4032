#include "syntorch/runtime/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "syntorch/base/units.hpp"
#include "syntorch/hw/sim_machine.hpp"
#include "syntorch/os/host_thread.hpp"
#include "syntorch/os/stream.hpp"
#include "syntorch/runtime/dispatcher.hpp"
#include "syntorch/runtime/executor.hpp"
#include "syntorch/sim/simulator.hpp"
#include "syntorch/trace/recorder.hpp"
#include "engine_trace.hpp"

namespace syntorch::runtime {

namespace {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// A communication call as a rank issued it: a collective over a group, or one side of a
// send/recv with a peer. Interned per rank (calls repeat every layer), so a work item carries a
// pointer to one that never changes.
struct CommCall {
  enum class Kind : std::uint8_t { collective, send, recv };
  Kind kind = Kind::collective;
  OpKind op = OpKind::allreduce;
  std::uint32_t target = 0;  // the group (collective) or the peer's global rank (send, recv)
  std::uint64_t bytes = 0;
  bool operator==(const CommCall&) const = default;
};
struct CommCallHash {
  std::size_t operator()(const CommCall& c) const {
    return std::hash<std::uint64_t>{}(c.bytes * 0x9e3779b97f4a7c15ULL ^ (std::uint64_t{c.target} << 16) ^
                                      (static_cast<std::uint64_t>(c.op) << 8) ^ static_cast<std::uint64_t>(c.kind));
  }
};
constexpr std::uint64_t kMaxCallBytes = (std::uint64_t{1} << 40) - 1;

// A kernel as lowered for a rank, with the dispatcher's reasons joined for traces.
struct LoweredKernel {
  Kernel kernel;
  std::string why;
};

}  // namespace

struct Engine::Impl {
  // ---- one rank: the producer side (its program's thread) and the consumer side (simulator) ----
  struct Rank final : RankContext {
    Impl& engine;
    int index;
    std::uint32_t device;

    // Producer side.
    os::CachingAllocator allocator;
    os::ActionQueue queue;
    std::unordered_map<OpDesc, std::unique_ptr<std::vector<LoweredKernel>>, OpDescHash> lowered;
    std::unordered_map<CommCall, std::unique_ptr<const CommCall>, CommCallHash> calls;
    // Ops as traces show them, by (name, kernels).
    struct OpRecord {
      const std::string* name = nullptr;
      std::string shape;
      std::string_view dtype;
    };
    std::map<std::pair<const void*, const void*>, std::unique_ptr<OpRecord>> op_records;
    std::unordered_set<std::string, StringHash, std::equal_to<>> names;  // node-stable: pointers travel in actions
    struct Live {
      std::uint64_t bytes = 0;
      const std::string* name = nullptr;
    };
    std::vector<Live> live;  // by allocator block id
    bool capturing = false;
    std::vector<os::HostAction> captured;
    std::uint64_t recvs_issued = 0;
    std::exception_ptr error;
    std::optional<OomReport> oom;

    // Consumer side.
    std::vector<std::unique_ptr<os::Stream>> streams;
    std::vector<os::Stream*> stream_ptrs;
    struct Slot {
      const LoweredKernel* kernel = nullptr;
      KernelRun run;
      sim::TimePs comm_start_ps = 0;
      std::uint64_t flow_id = 0;  // from the launching op, when traced
      std::uint64_t after_seq = 0;
    };
    std::vector<Slot> slots;  // per stream: what it runs now
    std::unique_ptr<os::HostThread> host_thread;
    RankResult result;
    struct OpenScope {
      const std::string* name;
      sim::TimePs begin_ps;
      std::uint64_t instance;  // distinguishes two scopes of the same name (two decode steps)
    };
    std::vector<OpenScope> scope_stack;
    std::uint64_t scopes_opened = 0;
    // Tracing: flows from launches to their stream items, and the op being launched.
    // A launched item not yet started: its flow from the op and the model scopes it was launched
    // in (outermost first), which become spans on the stream around its device work.
    static constexpr std::size_t kScopeDepth = 4;
    struct Pending {
      std::uint64_t flow_id = 0;
      std::uint64_t after_seq = 0;  // the device span it waits for on another stream (traces)
      std::array<const std::string*, kScopeDepth> scopes{};
      std::array<std::uint64_t, kScopeDepth> instances{};
    };
    struct DeviceScopes {
      std::array<const std::string*, kScopeDepth> open{};
      std::array<std::uint64_t, kScopeDepth> instances{};
      std::array<sim::TimePs, kScopeDepth> begin_ps{};
      sim::TimePs last_end_ps = 0;
    };
    std::vector<std::deque<Pending>> pending_flows;  // per stream
    // Receives done so far, and the compute-stream wait for one not yet done.
    std::uint64_t recvs_done = 0;
    std::uint64_t join_seq = 0;
    std::uint32_t join_stream = 0;
    bool join_waiting = false;
    sim::TimePs join_start_ps = 0;
    std::uint64_t join_flow = 0;
    // Tracing: the last device span per stream, and the spans of receives not yet joined.
    std::vector<std::uint64_t> last_seq;
    std::deque<std::uint64_t> recv_seqs;
    std::vector<DeviceScopes> device_scopes;         // per stream
    std::vector<std::uint64_t> op_flows;
    std::vector<sim::TimePs> op_flow_ps;
    sim::TimePs op_begin_ps = 0;

    // An item starts on `stream` at `now`: its flow id (0 when untraced); the device scopes
    // around it change where its scopes differ from the previous item's.
    std::uint64_t begin_item(std::uint32_t stream, sim::TimePs now) {
      if (stream >= pending_flows.size() || pending_flows[stream].empty()) return 0;
      const Pending p = pending_flows[stream].front();
      pending_flows[stream].pop_front();
      slots[stream].after_seq = p.after_seq;
      DeviceScopes& d = device_scopes[stream];
      std::size_t same = 0;
      while (same < kScopeDepth && p.scopes[same] != nullptr && d.open[same] == p.scopes[same] &&
             d.instances[same] == p.instances[same]) {
        ++same;
      }
      close_scopes(stream, same);
      for (std::size_t i = same; i < kScopeDepth && p.scopes[i] != nullptr; ++i) {
        d.open[i] = p.scopes[i];
        d.instances[i] = p.instances[i];
        d.begin_ps[i] = now;
      }
      return p.flow_id;
    }
    void end_item(std::uint32_t stream, sim::TimePs end) {
      if (stream < device_scopes.size()) device_scopes[stream].last_end_ps = end;
    }
    // Ends the device scopes from depth `from` down, at the last item's end.
    void close_scopes(std::uint32_t stream, std::size_t from) {
      DeviceScopes& d = device_scopes[stream];
      for (std::size_t i = kScopeDepth; i-- > from;) {
        if (d.open[i] == nullptr) continue;
        engine.tracer->scope_span(index, stream, *d.open[i], d.begin_ps[i], std::max(d.begin_ps[i], d.last_end_ps));
        d.open[i] = nullptr;
      }
    }

    Rank(Impl& e, int r, std::uint32_t dev, std::uint64_t capacity)
        : engine(e), index(r), device(dev), allocator(capacity) {}

    int rank() const override { return index; }
    int world_size() const override { return engine.world_size; }

    const std::string* intern(std::string_view name) {
      auto it = names.find(name);
      if (it == names.end()) it = names.emplace(name).first;
      return &*it;
    }

    void push(const os::HostAction& a) {
      if (capturing) {
        captured.push_back(a);
        captured.back().host_ps = 0;
      } else {
        queue.push(a);
      }
    }

    std::uint32_t allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) override {
      auto block = allocator.allocate(bytes, use);
      if (!block) {
        OomReport report;
        report.rank = index;
        report.device_name = engine.machine.devices()[device].name;
        report.requested_bytes = bytes;
        report.requested_for = std::string(what);
        report.memory = allocator.stats();
        std::map<std::string, std::uint64_t> by_name;
        for (const Live& l : live) {
          if (l.name) by_name[*l.name] += l.bytes;
        }
        report.largest.assign(by_name.begin(), by_name.end());
        std::stable_sort(report.largest.begin(), report.largest.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        if (report.largest.size() > 8) report.largest.resize(8);
        oom = std::move(report);
        throw OutOfMemory(index, bytes, std::string(what));
      }
      if (live.size() <= block->id) live.resize(block->id + 1);
      live[block->id] = Live{block->size, intern(what)};
      if (engine.trace_memory) mark_memory(true, live[block->id], block->id);
      return block->id;
    }

    void free(std::uint32_t handle) override {
      allocator.free(handle);
      if (handle < live.size()) {
        if (engine.trace_memory) mark_memory(false, live[handle], handle);
        live[handle] = Live{};
      }
    }

    // A zero-cost host action that shows an allocation or free at its place on the host timeline.
    void mark_memory(bool allocated, const Live& l, std::uint32_t handle) {
      os::HostAction a;
      a.note = &Impl::note_memory;
      a.note_obj = this;
      a.note_arg = reinterpret_cast<std::uint64_t>(l.name);
      a.stream = allocated ? 1 : 0;
      a.data[0] = l.bytes;
      a.data[1] = allocator.stats().allocated_bytes;
      a.data[2] = allocator.stats().reserved_bytes;
      a.data[3] = handle;
      queue.push(a);
    }

    const std::vector<LoweredKernel>& lower(const OpDesc& op) {
      auto [it, fresh] = lowered.try_emplace(op);
      if (fresh) {
        auto kernels = std::make_unique<std::vector<LoweredKernel>>();
        for (Kernel& k : engine.dispatcher.lower(op, device)) {
          LoweredKernel lk;
          if (engine.tracer) lk.why = join(k.why, "; ");
          lk.kernel = std::move(k);
          kernels->push_back(std::move(lk));
        }
        it->second = std::move(kernels);
      }
      return *it->second;
    }

    // The record a traced launch's note reads: the op's name and shape. `describe` gives the
    // shape of an op without an OpDesc; it runs only when the record is made.
    template <class Describe>
    const OpRecord* op_record(std::string_view name, const void* what, const OpDesc* op, Describe&& describe) {
      const std::string* n = intern(name);
      auto& r = op_records[{n, what}];
      if (!r) {
        r = std::make_unique<OpRecord>();
        r->name = n;
        if (op) {
          r->shape = op->describe();
          r->dtype = dtype_name(op->dtype);
        } else {
          r->shape = describe();
        }
      }
      return r.get();
    }
    const OpRecord* op_record(std::string_view name, const void* what, const OpDesc* op) {
      return op_record(name, what, op, [] { return std::string(); });
    }
    // What a communication call moves, for its op span.
    std::string describe_call(const CommCall& call) const {
      if (call.kind == CommCall::Kind::send) return fmt::format("{} bytes to rank {}", call.bytes, call.target);
      if (call.kind == CommCall::Kind::recv) return fmt::format("{} bytes from rank {}", call.bytes, call.target);
      return fmt::format("{} of {} bytes over ranks {}", op_name(call.op), call.bytes,
                         fmt::join(engine.group(GroupId{call.target}).ranks, ","));
    }
    const CommCall* intern_call(const CommCall& call) {
      auto& slot = calls[call];
      if (!slot) slot = std::make_unique<const CommCall>(call);
      return slot.get();
    }

    void note_launches(os::HostAction& a, const OpRecord* record, std::size_t i, std::size_t n) {
      a.note = &Impl::note_launch;
      a.note_obj = this;
      a.note_arg = reinterpret_cast<std::uint64_t>(record);
      a.data[0] = i;
      a.data[1] = n;
    }

    void launch(const OpDesc& op, std::string_view name) override {
      const std::vector<LoweredKernel>& kernels = lower(op);
      const OpRecord* record = engine.tracer ? op_record(name, &kernels, &op) : nullptr;
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        os::HostAction a;
        a.kind = os::HostAction::Kind::launch;
        a.host_ps = engine.launch_ps + (i == 0 ? engine.dispatch_ps : 0);
        a.ready_delay_ps = engine.latency_ps;
        a.work = {&Impl::start_kernel, this, reinterpret_cast<std::uint64_t>(&kernels[i])};
        if (record) note_launches(a, record, i, kernels.size());
        push(a);
      }
    }

    void host_op(std::string_view name) override {
      if (engine.dispatch_ps == 0 && !engine.tracer) return;  // nothing to spend, nothing to show
      os::HostAction a;
      a.host_ps = engine.dispatch_ps;
      if (engine.tracer) {
        a.note = &Impl::note_span;
        a.note_obj = this;
        a.note_arg = reinterpret_cast<std::uint64_t>(intern(name));
      }
      push(a);
    }

    void comm(const CommCall* call, std::string_view name) {
      os::HostAction a;
      a.kind = os::HostAction::Kind::launch;
      a.host_ps = engine.dispatch_ps + engine.launch_ps;
      a.ready_delay_ps = engine.latency_ps;
      a.work = {&Impl::start_comm, this, reinterpret_cast<std::uint64_t>(call)};
      if (engine.tracer) {
        note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
      }
      push(a);
    }

    void check_bytes(std::uint64_t bytes, std::string_view name) const {
      if (bytes == 0 || bytes > kMaxCallBytes) {
        throw std::invalid_argument(fmt::format("{}: {} bytes per rank is outside 1 B .. 1 TiB", name, bytes));
      }
    }

    void collective(const OpDesc& op, GroupId group, std::string_view name) override {
      if (!is_collective(op.kind) || op.kind == OpKind::sendrecv) {
        throw std::invalid_argument(fmt::format("{}: not a collective op", name));
      }
      check_bytes(op.bytes, name);
      const Group& g = engine.group(group);
      if (std::find(g.ranks.begin(), g.ranks.end(), index) == g.ranks.end()) {
        throw std::invalid_argument(fmt::format("{}: rank {} is not in group {}", name, index, g.name));
      }
      if (g.ranks.size() == 1) return;  // a group of one: nothing to do
      comm(intern_call({CommCall::Kind::collective, op.kind, group.value, op.bytes}), name);
    }

    void point_to_point(CommCall::Kind what, int peer, std::uint64_t bytes, std::string_view name) {
      check_bytes(bytes, name);
      if (peer < 0 || peer >= engine.world_size || peer == index) {
        throw std::invalid_argument(
            fmt::format("{}: peer rank {} is not another rank of the {}", name, peer, engine.world_size));
      }
      const CommCall* call = intern_call({what, OpKind::sendrecv, static_cast<std::uint32_t>(peer), bytes});
      os::HostAction a;
      a.kind = os::HostAction::Kind::launch;
      a.host_ps = engine.dispatch_ps + engine.launch_ps;
      a.ready_delay_ps = engine.latency_ps;
      if (engine.tracer) {
        note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
      }
      if (what == CommCall::Kind::send) {
        // On the compute stream, a mark that hands the send to the send stream once the work
        // launched before it is done; the compute stream goes on without waiting.
        a.work = {&Impl::start_fork_send, this, reinterpret_cast<std::uint64_t>(call)};
        push(a);
        return;
      }
      // The receive on the receive stream, and on the compute stream a wait for it.
      a.stream = static_cast<std::uint16_t>(engine.recv_stream);
      a.work = {&Impl::start_comm, this, reinterpret_cast<std::uint64_t>(call)};
      push(a);
      os::HostAction join;
      join.kind = os::HostAction::Kind::launch;
      join.ready_delay_ps = engine.latency_ps;
      join.work = {&Impl::start_join_recv, this, recvs_issued++};
      if (engine.tracer) note_launches(join, op_record("wait for recv", nullptr, nullptr), 0, 1);
      push(join);
    }
    void send(int peer, std::uint64_t bytes, std::string_view name) override { point_to_point(CommCall::Kind::send, peer, bytes, name); }
    void recv(int peer, std::uint64_t bytes, std::string_view name) override { point_to_point(CommCall::Kind::recv, peer, bytes, name); }

    void copy(bool to_device, std::uint64_t bytes, std::string_view name) {
      check_bytes(bytes, name);
      if (!engine.machine.host_of_device(device)) {
        throw std::invalid_argument(
            fmt::format("{}: {} has no host to copy to or from", name, engine.machine.devices()[device].name));
      }
      os::HostAction a;
      a.kind = os::HostAction::Kind::launch;
      a.host_ps = engine.dispatch_ps + engine.launch_ps;
      a.ready_delay_ps = engine.latency_ps;
      a.work = {&Impl::start_copy, this, (to_device ? std::uint64_t{1} << 63 : 0) | bytes};
      if (engine.tracer) {
        note_launches(a, op_record(name, reinterpret_cast<const void*>(a.work.arg), nullptr, [&] {
                        return fmt::format("{} bytes {}", bytes, to_device ? "host to device" : "device to host");
                      }),
                      0, 1);
      }
      push(a);
    }
    void copy_host_to_device(std::uint64_t bytes, std::string_view name) override { copy(true, bytes, name); }
    void copy_device_to_host(std::uint64_t bytes, std::string_view name) override { copy(false, bytes, name); }

    void synchronize(std::string_view reason) override {
      if (capturing) throw std::logic_error(fmt::format("{}: cannot synchronise while capturing a graph", reason));
      os::HostAction a;
      a.kind = os::HostAction::Kind::sync;
      a.note = &Impl::note_span;
      a.note_obj = this;
      a.note_arg = reinterpret_cast<std::uint64_t>(intern(reason));
      push(a);
    }

    void graph_begin() override {
      if (capturing) throw std::logic_error("graph capture already in progress");
      capturing = true;
      captured.clear();
    }
    void graph_end() override {
      if (!capturing) throw std::logic_error("graph_end without graph_begin");
      capturing = false;
      os::HostAction launch;
      launch.host_ps = engine.graph_ps;
      launch.note = &Impl::note_span;
      launch.note_obj = this;
      launch.note_arg = reinterpret_cast<std::uint64_t>(intern("cudaGraphLaunch"));
      queue.push(launch);
      for (const os::HostAction& a : captured) queue.push(a);
      captured.clear();
    }

    void scope_begin(std::string_view name) override {
      os::HostAction a;
      a.note = &Impl::note_scope_begin;
      a.note_obj = this;
      a.note_arg = reinterpret_cast<std::uint64_t>(intern(name));
      push(a);  // inside a capture, with the captured work: around it when the graph is launched
    }
    void scope_end() override {
      os::HostAction a;
      a.note = &Impl::note_scope_end;
      a.note_obj = this;
      push(a);
    }

    GroupId new_group(const std::vector<int>& ranks) override { return engine.new_group(ranks); }
  };

  // ---- process groups ----
  struct Group {
    std::vector<int> ranks;
    std::vector<std::uint32_t> devices;
    std::string name;
  };
  GroupId new_group(const std::vector<int>& ranks) {
    std::lock_guard lock(groups_mutex);
    if (ranks.empty()) throw std::invalid_argument("new_group: a group needs at least one rank");
    for (int r : ranks) {
      if (r < 0 || r >= world_size) {
        throw std::invalid_argument(fmt::format("new_group: rank {} is outside 0..{}", r, world_size - 1));
      }
    }
    auto it = group_ids.find(ranks);
    if (it != group_ids.end()) return GroupId{it->second};
    if (groups.size() >= 0xfffff) throw std::invalid_argument("new_group: too many groups");
    auto g = std::make_unique<Group>();
    g->ranks = ranks;
    std::vector<std::string> parts;
    for (int r : ranks) {
      g->devices.push_back(static_cast<std::uint32_t>(r));
      parts.push_back(std::to_string(r));
    }
    g->name = fmt::format("ranks {}", fmt::join(parts, ","));
    groups.push_back(std::move(g));
    const auto id = static_cast<std::uint32_t>(groups.size() - 1);
    group_ids.emplace(ranks, id);
    return GroupId{id};
  }
  const Group& group(GroupId id) {
    std::lock_guard lock(groups_mutex);
    if (id.value >= groups.size()) throw std::invalid_argument(fmt::format("unknown process group {}", id.value));
    return *groups[id.value];
  }

  // ---- collectives and sends: rendezvous, then one fluid flow ----
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
  };
  struct Member {
    Rank* rank = nullptr;
    std::uint32_t stream = 0;
  };
  struct Meeting {
    std::uint32_t arrived = 0;
    std::uint64_t bytes = 0;
    std::uint32_t kind = 0;
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

  Rendezvous& rendezvous_for_group(std::uint32_t group_id) {
    auto it = group_rendezvous.find(group_id);
    if (it != group_rendezvous.end()) return it->second;
    Rendezvous& r = group_rendezvous[group_id];
    const Group& g = group(GroupId{group_id});  // under the lock: programs may still be adding groups
    r.devices = g.devices;
    r.ranks = g.ranks;
    r.members = fmt::format("{}", fmt::join(g.ranks, ","));
    r.calls.assign(g.ranks.size(), 0);
    return r;
  }
  Rendezvous& rendezvous_for_pair(int src, int dst) {
    const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
    auto it = pair_rendezvous.find(key);
    if (it != pair_rendezvous.end()) return it->second;
    Rendezvous& r = pair_rendezvous[key];
    r.ranks = {src, dst};
    r.members = fmt::format("{},{}", src, dst);
    r.devices = {static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst)};
    r.calls.assign(2, 0);
    return r;
  }

  static void start_comm(void* obj, std::uint64_t call_arg, os::Stream& stream) {
    const CommCall& call = *reinterpret_cast<const CommCall*>(call_arg);
    auto* rank = static_cast<Rank*>(obj);
    Impl& e = rank->engine;
    rank->slots[stream.index()].comm_start_ps = e.sim.now();
    rank->slots[stream.index()].flow_id = rank->begin_item(stream.index(), e.sim.now());
    const std::uint64_t bytes = call.bytes;
    const auto kind = static_cast<std::uint32_t>(call.op);
    Rendezvous* rv;
    std::size_t position;
    if (call.kind != CommCall::Kind::collective) {
      const bool send = call.kind == CommCall::Kind::send;
      const int peer = static_cast<int>(call.target);
      rv = &e.rendezvous_for_pair(send ? rank->index : peer, send ? peer : rank->index);
      position = send ? 0 : 1;
    } else {
      rv = &e.rendezvous_for_group(call.target);
      position = static_cast<std::size_t>(std::find(rv->ranks.begin(), rv->ranks.end(), rank->index) - rv->ranks.begin());
    }
    const std::uint64_t number = rv->calls[position]++;
    while (rv->first + rv->meetings.size() <= number) {
      Meeting m;
      if (!rv->spare.empty()) {  // no allocation per collective in the steady state
        m.members = std::move(rv->spare.back());
        rv->spare.pop_back();
      }
      m.members.assign(rv->ranks.size(), Member{});
      rv->meetings.push_back(std::move(m));
    }
    Meeting& m = rv->meetings[number - rv->first];
    if (m.arrived == 0) {
      m.bytes = bytes;
      m.kind = kind;
    } else if (m.bytes != bytes || m.kind != kind) {
      throw std::logic_error(fmt::format("rank {} joined {} call {} of ranks {} with {} {} bytes; others with {} {} bytes",
                                         rank->index, op_name(static_cast<OpKind>(kind)), number,
                                         fmt::join(rv->ranks, ","), op_name(static_cast<OpKind>(kind)), bytes,
                                         op_name(static_cast<OpKind>(m.kind)), m.bytes));
    }
    m.members[position] = Member{rank, stream.index()};
    if (++m.arrived < rv->ranks.size()) return;
    // Everyone is here (meetings complete in order per participant, so this is the front one).
    Meeting done = std::move(m);
    while (!rv->meetings.empty() && rv->meetings.front().arrived == rv->ranks.size()) {
      rv->meetings.pop_front();
      ++rv->first;
    }
    e.run_fluid(*rv, static_cast<OpKind>(done.kind), done.bytes, std::move(done.members), number);
  }

  const Fluid& fluid_for(const Rendezvous& rv, OpKind kind, std::uint64_t bytes) {
    // Rendezvous live as long as the engine and stand for their participants.
    const std::tuple<const Rendezvous*, std::uint32_t, std::uint64_t> key{&rv, static_cast<std::uint32_t>(kind), bytes};
    auto it = fluids.find(key);
    if (it != fluids.end()) return it->second;
    OpDesc op;
    op.kind = kind;
    op.ranks = static_cast<std::uint32_t>(rv.devices.size());
    op.bytes = bytes;
    const CollectivePlan plan = dispatcher.lower_collective(op, rv.devices);
    // The chunk-level plan alone on a scratch copy of the machine.
    sim::Simulator scratch;
    hw::SimMachine hw(scratch, machine);
    Executor executor(hw);
    executor.run_collective(plan, nullptr, nullptr, 0);
    scratch.run();
    Fluid f;
    f.duration_ps = scratch.now();
    f.devices = rv.devices;
    f.algorithm = plan.algorithm;
    std::vector<std::pair<double, sim::ResourceId>> loads;
    for (sim::ResourceId r = 0; r < hw.network().resource_count(); ++r) {
      const double b = hw.network().bytes_carried(r);
      if (b > 0) loads.emplace_back(b, r);
    }
    std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (const auto& [bytes, r] : loads) {
      // Within 1% of a group's largest load: the same part (it then moves slightly more).
      if (f.parts.empty() || bytes < 0.99 * f.parts.back().bytes) f.parts.push_back({bytes, {}});
      f.parts.back().path.push_back(r);
    }
    for (auto& part : f.parts) std::sort(part.path.begin(), part.path.end());
    return fluids.emplace(key, std::move(f)).first->second;
  }

  void run_fluid(Rendezvous& rv, OpKind kind, std::uint64_t bytes, std::vector<Member> members,
                 std::uint64_t number) {
    const Fluid& f = fluid_for(rv, kind, bytes);
    std::uint32_t slot = 0;
    while (slot < running.size() && !running[slot].free) ++slot;
    if (slot == running.size()) running.emplace_back();
    running[slot].free = false;
    running[slot].members = std::move(members);
    running[slot].rendezvous = &rv;
    running[slot].fluid = &f;
    running[slot].kind = kind;
    running[slot].bytes = bytes;
    running[slot].number = number;
    running[slot].start_ps = sim.now();
    for (std::uint32_t d : f.devices) executor->share_device(d);
    if (f.parts.empty() || f.duration_ps == 0) {
      running[slot].parts_left = 1;
      sim.after(f.duration_ps, &Impl::on_comm_done, this, slot);
      return;
    }
    running[slot].parts_left = f.parts.size();
    for (const Fluid::Part& part : f.parts) {
      const double cap = part.bytes / units::ps_to_seconds(f.duration_ps);
      hw->network().start(part.path, part.bytes, &Impl::on_comm_done, this, slot, cap);
    }
  }

  // A send reached on the compute stream: hand it to the send stream and go on.
  static void start_fork_send(void* obj, std::uint64_t call, os::Stream& stream) {
    auto* rank = static_cast<Rank*>(obj);
    Impl& e = rank->engine;
    const std::uint32_t send_stream = e.send_stream;
    Rank::Pending p;
    if (!rank->pending_flows[stream.index()].empty()) {
      p = rank->pending_flows[stream.index()].front();
      rank->pending_flows[stream.index()].pop_front();
      p.after_seq = rank->last_seq[stream.index()];  // the computation the send waited for
      rank->pending_flows[send_stream].push_back(p);
    }
    rank->streams[send_stream]->enqueue(e.sim.now(), {&Impl::start_comm, rank, call});
    stream.finish_current();
  }
  // On the compute stream: go on once receive number `seq` has arrived.
  static void start_join_recv(void* obj, std::uint64_t seq, os::Stream& stream) {
    auto* rank = static_cast<Rank*>(obj);
    const std::uint64_t flow = rank->begin_item(stream.index(), rank->engine.sim.now());
    if (seq < rank->recvs_done) {
      trace_join(rank, stream.index(), rank->engine.sim.now(), rank->engine.sim.now(), flow);
      rank->end_item(stream.index(), rank->engine.sim.now());
      stream.finish_current();
      return;
    }
    rank->join_waiting = true;
    rank->join_seq = seq;
    rank->join_stream = stream.index();
    rank->join_start_ps = rank->engine.sim.now();
    rank->join_flow = flow;
  }
  // The compute stream's wait for a receive, as a span after the receive's (Chakra needs it).
  static void trace_join(Rank* rank, std::uint32_t stream, sim::TimePs begin, sim::TimePs end, std::uint64_t flow) {
    Impl& e = rank->engine;
    if (!e.tracer || !e.tracer->device_work()) return;
    std::uint64_t after = 0;
    if (!rank->recv_seqs.empty()) {
      after = rank->recv_seqs.front();
      rank->recv_seqs.pop_front();
    }
    rank->last_seq[stream] = e.tracer->device_span(rank->index, stream, "wait for recv", "wait", begin, end, flow, {}, 0,
                                                   trace::FlowPhase::kBegin, after);
  }
  static void recv_done(Rank* rank, sim::TimePs now) {
    ++rank->recvs_done;
    if (!rank->join_waiting || rank->join_seq >= rank->recvs_done) return;
    rank->join_waiting = false;
    rank->result.waiting_ps += now - rank->join_start_ps;
    trace_join(rank, rank->join_stream, rank->join_start_ps, now, rank->join_flow);
    rank->end_item(rank->join_stream, now);
    rank->streams[rank->join_stream]->finish_current();
  }

  static void on_comm_done(void* obj, std::uint64_t slot) {
    auto* e = static_cast<Impl*>(obj);
    Running& r = e->running[slot];
    if (--r.parts_left > 0) return;
    const sim::TimePs now = e->sim.now();
    std::vector<Member> members = std::move(r.members);
    r.members = {};
    r.free = true;
    const std::uint64_t member_flow = e->tracer && e->tracer->device_work() ? e->tracer->next_flow_id() : 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Member& m = members[i];
      Rank::Slot& sl = m.rank->slots[m.stream];
      // Until everyone arrived: waiting for peers; then moving the data.
      const bool p2p = r.kind == OpKind::sendrecv;
      m.rank->result.waiting_ps += p2p ? 0 : r.start_ps - sl.comm_start_ps;
      (p2p ? m.rank->result.p2p_ps : m.rank->result.communication_ps) += now - (p2p ? sl.comm_start_ps : r.start_ps);
      m.rank->result.device_finish_ps = now;
      ++m.rank->result.collectives;
      if (member_flow != 0) {
        const auto phase = i == 0 ? trace::FlowPhase::kBegin
                                  : (i + 1 == members.size() ? trace::FlowPhase::kEnd : trace::FlowPhase::kStep);
        if (r.kind == OpKind::sendrecv) {
          const trace::Arg args[] = {{"src", r.rendezvous->ranks[0]},
                                     {"dst", r.rendezvous->ranks[1]},
                                     {"tag", r.number},
                                     {"comm_bytes", r.bytes},
                                     {"algorithm", r.fluid->algorithm}};
          const std::uint64_t seq = e->tracer->device_span(m.rank->index, m.stream, i == 0 ? "send" : "recv", "p2p",
                                                           sl.comm_start_ps, now, sl.flow_id, args, member_flow, phase,
                                                           sl.after_seq);
          m.rank->last_seq[m.stream] = seq;
          if (i == 1) m.rank->recv_seqs.push_back(seq);
        } else {
          const trace::Arg args[] = {{"comm_type", op_name(r.kind)},
                                     {"comm_bytes", r.bytes},
                                     {"group", r.rendezvous->members},
                                     {"algorithm", r.fluid->algorithm}};
          m.rank->last_seq[m.stream] = e->tracer->device_span(m.rank->index, m.stream, op_name(r.kind), "collective",
                                                              sl.comm_start_ps, now, sl.flow_id, args, member_flow, phase);
        }
      }
      sl.flow_id = 0;
      m.rank->end_item(m.stream, now);
      m.rank->streams[m.stream]->finish_current();
      if (p2p && i == 1) recv_done(m.rank, now);
    }
    r.rendezvous->spare.push_back(std::move(members));
  }

  // ---- host <-> device copies ----
  struct Copy {
    Rank* rank = nullptr;
    std::uint32_t stream = 0;
    sim::TimePs start_ps = 0;
    std::uint64_t bytes = 0;
    bool to_device = false;
    std::uint64_t flow_id = 0;
  };
  static void start_copy(void* obj, std::uint64_t arg, os::Stream& stream) {
    auto* rank = static_cast<Rank*>(obj);
    Impl& e = rank->engine;
    const bool to_device = (arg >> 63) != 0;
    const std::uint64_t bytes = arg & ~(std::uint64_t{1} << 63);
    const std::uint32_t host_ep = e.machine.hosts()[*e.machine.host_of_device(rank->device)].endpoint;  // checked at launch
    const std::uint32_t dev_ep = e.machine.devices()[rank->device].endpoint;
    std::uint32_t slot;
    if (!e.free_copies.empty()) {
      slot = e.free_copies.back();
      e.free_copies.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(e.copies.size());
      e.copies.emplace_back();
    }
    e.copies[slot] = {rank, stream.index(), e.sim.now(), bytes, to_device, rank->begin_item(stream.index(), e.sim.now())};
    hw::TransferOptions options;
    options.touch_hbm = true;
    e.hw->transfer(to_device ? host_ep : dev_ep, to_device ? dev_ep : host_ep, static_cast<double>(bytes),
                   &Impl::on_copy_done, &e, slot, options);
  }
  static void on_copy_done(void* obj, std::uint64_t slot) {
    auto* e = static_cast<Impl*>(obj);
    const Copy c = e->copies[slot];
    e->free_copies.push_back(static_cast<std::uint32_t>(slot));
    const sim::TimePs now = e->sim.now();
    c.rank->result.communication_ps += now - c.start_ps;
    c.rank->result.device_finish_ps = now;
    if (e->tracer && e->tracer->device_work()) {
      const trace::Arg args[] = {{"bytes", c.bytes}, {"direction", c.to_device ? "host to device" : "device to host"}};
      c.rank->last_seq[c.stream] = e->tracer->device_span(c.rank->index, c.stream,
                                                          c.to_device ? "memcpy HtoD" : "memcpy DtoH", "memcpy",
                                                          c.start_ps, now, c.flow_id, args);
    }
    c.rank->end_item(c.stream, now);
    c.rank->streams[c.stream]->finish_current();
  }

  // ---- kernels ----
  static void start_kernel(void* obj, std::uint64_t arg, os::Stream& stream) {
    auto* rank = static_cast<Rank*>(obj);
    Rank::Slot& slot = rank->slots[stream.index()];
    slot.kernel = reinterpret_cast<const LoweredKernel*>(arg);
    slot.flow_id = rank->begin_item(stream.index(), rank->engine.sim.now());
    rank->engine.executor->launch(slot.kernel->kernel, slot.run, &Impl::on_kernel_done, rank, stream.index());
  }
  static void on_kernel_done(void* obj, std::uint64_t stream) {
    auto* rank = static_cast<Rank*>(obj);
    Impl& e = rank->engine;
    Rank::Slot& slot = rank->slots[stream];
    const KernelRun& run = slot.run;
    const Kernel& k = slot.kernel->kernel;
    const sim::TimePs took = run.end_ps - run.start_ps;
    const bool compute_bound = run.compute_ps >= run.memory_ps;
    (compute_bound ? rank->result.compute_bound_ps : rank->result.memory_bound_ps) += took;
    rank->result.flops += k.flops;
    rank->result.flops_by_op[static_cast<std::size_t>(k.op)] += k.flops;
    rank->result.hbm_bytes += k.hbm_bytes;
    ++rank->result.kernels;
    rank->result.device_finish_ps = run.end_ps;
    if (e.tracer && e.tracer->device_work()) {
      // "op" only when the kernel is not simply named after it, "tile" only for tiled kernels.
      trace::Arg args[7] = {{"impl", k.impl},
                            {"flops", static_cast<std::uint64_t>(std::llround(k.flops))},
                            {"hbm_bytes", static_cast<std::uint64_t>(std::llround(k.hbm_bytes))},
                            {"bound", compute_bound ? "compute" : "memory"},
                            {"why", slot.kernel->why},
                            {"op", op_name(k.op)},
                            {"tile", k.tile}};
      std::size_t n = 5;
      if (k.name != op_name(k.op)) args[n++] = args[5];
      if (!k.tile.empty()) args[n++] = args[6];
      rank->last_seq[stream] = e.tracer->device_span(rank->index, static_cast<std::uint32_t>(stream), k.name, "kernel",
                                                     run.start_ps, run.end_ps, slot.flow_id,
                                                     std::span<const trace::Arg>(args, n));
    }
    slot.kernel = nullptr;
    slot.flow_id = 0;
    rank->end_item(static_cast<std::uint32_t>(stream), run.end_ps);
    rank->streams[stream]->finish_current();
  }

  // ---- host notes ----
  // A host-only action (a view, a synchronisation, a graph launch).
  static void note_span(void* obj, const os::HostAction& a, sim::TimePs begin, sim::TimePs end) {
    auto* rank = static_cast<Rank*>(obj);
    if (!rank->engine.tracer) return;
    const std::string_view category = a.kind == os::HostAction::Kind::sync ? "sync" : "op";
    rank->engine.tracer->host_span(rank->index, *reinterpret_cast<const std::string*>(a.note_arg), category, begin, end);
  }
  // Launch i of n of one op: flows to the stream items; the op's span after the last.
  static void note_launch(void* obj, const os::HostAction& a, sim::TimePs begin, sim::TimePs end) {
    auto* rank = static_cast<Rank*>(obj);
    detail::EngineTrace& t = *rank->engine.tracer;
    const auto* record = reinterpret_cast<const Rank::OpRecord*>(a.note_arg);
    if (a.data[0] == 0) {
      rank->op_begin_ps = begin;
      rank->op_flows.clear();
      rank->op_flow_ps.clear();
    }
    if (t.device_work()) {
      const std::uint64_t id = t.next_flow_id();
      Rank::Pending p;
      p.flow_id = id;
      for (std::size_t i = 0; i < rank->scope_stack.size() && i < Rank::kScopeDepth; ++i) {
        p.scopes[i] = rank->scope_stack[i].name;
        p.instances[i] = rank->scope_stack[i].instance;
      }
      rank->pending_flows[a.stream].push_back(p);
      rank->op_flows.push_back(id);
      rank->op_flow_ps.push_back(begin);
    }
    if (a.data[0] + 1 == a.data[1]) {
      t.op_span(rank->index, *record->name, record->shape, record->dtype, rank->op_begin_ps, end, rank->op_flows,
                rank->op_flow_ps);
    }
  }
  static void note_memory(void* obj, const os::HostAction& a, sim::TimePs at, sim::TimePs) {
    auto* rank = static_cast<Rank*>(obj);
    rank->engine.tracer->memory_event(rank->index, at, a.stream == 1, *reinterpret_cast<const std::string*>(a.note_arg),
                                      a.data[0], a.data[1], a.data[2], a.data[3]);
  }
  static void note_scope_begin(void* obj, const os::HostAction& a, sim::TimePs begin, sim::TimePs) {
    auto* rank = static_cast<Rank*>(obj);
    rank->scope_stack.push_back({reinterpret_cast<const std::string*>(a.note_arg), begin, ++rank->scopes_opened});
  }
  static void note_scope_end(void* obj, const os::HostAction&, sim::TimePs end, sim::TimePs) {
    auto* rank = static_cast<Rank*>(obj);
    if (rank->scope_stack.empty()) throw std::logic_error(fmt::format("rank {}: scope_end without scope_begin", rank->index));
    const auto [name, begin, instance] = rank->scope_stack.back();
    rank->scope_stack.pop_back();
    if (rank->scope_stack.empty()) rank->result.steps.push_back({*name, begin, end});
    if (rank->engine.tracer) rank->engine.tracer->host_span(rank->index, *name, "scope", begin, end);
  }

  // Hardware counters (trace level hw).
  static void on_units(void* obj, std::uint64_t rank, std::uint32_t in_use) {
    auto* e = static_cast<Impl*>(obj);
    e->tracer->units_in_use(static_cast<int>(rank), e->sim.now(), in_use);
  }
  static void on_rates(void* obj) {
    auto* e = static_cast<Impl*>(obj);
    const sim::FlowNetwork& net = e->hw->network();
    const sim::TimePs now = e->sim.now();
    for (auto& w : e->watched) {
      const double rate = net.used_rate(w.resource);
      if (rate == w.last) continue;
      w.last = rate;
      if (w.rank >= 0) e->tracer->hbm_rate(w.rank, now, rate);
      else e->tracer->link_rate(w.track, now, rate);
    }
  }

  Impl(const hw::Machine& m, KernelPolicy policy, int world, EngineOptions opts)
      : machine(m), dispatcher(m, std::move(policy)), world_size(world), options(std::move(opts)) {}

  const hw::Machine& machine;
  Dispatcher dispatcher;
  int world_size;
  EngineOptions options;
  std::unique_ptr<detail::EngineTrace> tracer;  // when tracing
  bool trace_memory = false;
  struct Watched {
    sim::ResourceId resource;
    int rank;             // an HBM (>= 0), or a link direction (-1) with its own track
    trace::TrackId track;
    double last = 0;
  };
  std::vector<Watched> watched;

  sim::Simulator sim;
  std::unique_ptr<hw::SimMachine> hw;
  std::unique_ptr<Executor> executor;
  std::vector<std::unique_ptr<Rank>> ranks;
  sim::TimePs dispatch_ps = 0, launch_ps = 0, latency_ps = 0, graph_ps = 0, sync_ps = 0;

  std::mutex groups_mutex;
  std::vector<std::unique_ptr<Group>> groups;
  std::map<std::vector<int>, std::uint32_t> group_ids;
  std::unordered_map<std::uint32_t, Rendezvous> group_rendezvous;
  std::unordered_map<std::uint64_t, Rendezvous> pair_rendezvous;
  std::map<std::tuple<const Rendezvous*, std::uint32_t, std::uint64_t>, Fluid> fluids;
  std::vector<Running> running;
  // Streams per rank: the compute streams, then one for sends and one for receives.
  std::size_t streams_total = 0;
  std::uint32_t send_stream = 0;
  std::uint32_t recv_stream = 0;
  std::vector<Copy> copies;  // slots, reused
  std::vector<std::uint32_t> free_copies;
};

Engine::Engine(const hw::Machine& machine, KernelPolicy policy, int world_size, EngineOptions options)
    : machine_(machine), impl_(std::make_unique<Impl>(machine, std::move(policy), world_size, std::move(options))) {
  if (world_size < 1) throw std::invalid_argument("a run needs at least one rank");
  if (static_cast<std::size_t>(world_size) > machine.devices().size()) {
    Diagnostics d;
    d.error(machine.name(), "",
            fmt::format("{} ranks need {} devices; the machine has {}", world_size, world_size, machine.devices().size()));
    throw InputError(std::move(d));
  }
  if (options.streams_per_rank < 1 || options.streams_per_rank > 64) {
    throw std::invalid_argument("streams_per_rank must be 1..64");
  }
}

Engine::~Engine() = default;

EngineResult Engine::run(const std::function<void(RankContext&)>& program) {
  Impl& e = *impl_;
  if (!e.ranks.empty()) throw std::logic_error("Engine::run may be called once");
  if (e.options.recorder != nullptr && e.options.recorder->enabled()) {
    e.tracer = std::make_unique<detail::EngineTrace>(*e.options.recorder, e.options.trace_level);
    e.trace_memory = e.tracer->memory();
  }
  e.send_stream = static_cast<std::uint32_t>(e.options.streams_per_rank);
  e.recv_stream = e.send_stream + 1;
  e.streams_total = e.options.streams_per_rank + 2;
  e.hw = std::make_unique<hw::SimMachine>(e.sim, machine_);
  e.executor = std::make_unique<Executor>(*e.hw);
  if (e.tracer && e.tracer->hardware()) e.executor->set_closed_form(false);

  // Host costs come from the host nearest rank 0's device (all ranks of a run share one kind).
  hw::HostSpec host_spec;
  if (auto h = machine_.host_of_device(0)) host_spec = machine_.hosts()[*h].spec;
  e.dispatch_ps = e.options.framework == Framework::eager ? units::seconds_to_ps(host_spec.op_dispatch_s) : 0;
  e.launch_ps = units::seconds_to_ps(host_spec.kernel_launch_s);
  e.latency_ps = units::seconds_to_ps(host_spec.launch_latency_s);
  e.graph_ps = units::seconds_to_ps(host_spec.graph_launch_s);
  e.sync_ps = units::seconds_to_ps(host_spec.sync_latency_s);

  for (int r = 0; r < e.world_size; ++r) {
    const auto d = static_cast<std::uint32_t>(r);
    const hw::Device& dev = machine_.devices()[d];
    auto rank = std::make_unique<Impl::Rank>(e, r, d, static_cast<std::uint64_t>(dev.memory.size_bytes));
    for (std::size_t s = 0; s < e.streams_total; ++s) {
      rank->streams.push_back(std::make_unique<os::Stream>(e.sim, d, static_cast<std::uint32_t>(s)));
      rank->stream_ptrs.push_back(rank->streams.back().get());
    }
    rank->slots.resize(e.streams_total);
    rank->host_thread = std::make_unique<os::HostThread>(e.sim, rank->queue, rank->stream_ptrs, e.sync_ps);
    rank->result.rank = r;
    rank->result.device = d;
    rank->result.device_name = dev.name;
    rank->pending_flows.resize(e.streams_total);
    rank->last_seq.assign(e.streams_total, 0);
    rank->device_scopes.resize(e.streams_total);
    if (e.tracer) {
      e.tracer->declare_rank(r, dev.name, e.options.streams_per_rank);  // p2p streams: declared when used
      if (e.tracer->hardware()) {
        e.hw->compute_units(d).set_observer(&Impl::on_units, &e, static_cast<std::uint64_t>(r));
        e.watched.push_back({e.hw->hbm(d), r, {}, 0});
      }
    }
    e.ranks.push_back(std::move(rank));
  }
  if (e.tracer && e.tracer->hardware()) {
    const auto& links = machine_.links();
    const auto& endpoints = machine_.endpoints();
    for (std::uint32_t l = 0; l < links.size(); ++l) {
      for (bool forward : {true, false}) {
        const std::string& from = endpoints[forward ? links[l].a : links[l].b].name;
        const std::string& to = endpoints[forward ? links[l].b : links[l].a].name;
        const sim::ResourceId resource = e.hw->link_direction(hw::Hop{l, forward});
        e.watched.push_back({resource, -1, e.tracer->declare_link(fmt::format("{} {} -> {}", links[l].name, from, to)), 0});
      }
    }
    e.hw->network().set_observer(&Impl::on_rates, &e);
  }

  std::vector<std::thread> threads;
  threads.reserve(e.ranks.size());
  for (auto& rank_ptr : e.ranks) {
    Impl::Rank* rank = rank_ptr.get();
    threads.emplace_back([rank, &program] {
      RankGuard guard(rank);
      try {
        program(*rank);
      } catch (const os::QueueAborted&) {
      } catch (const OutOfMemory&) {
        // rank->oom holds the report
      } catch (...) {
        rank->error = std::current_exception();
      }
      rank->queue.close();
    });
  }
  struct Joiner {
    Impl& e;
    std::vector<std::thread>& threads;
    ~Joiner() {
      for (auto& r : e.ranks) r->queue.abort();
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{e, threads};

  for (auto& rank : e.ranks) rank->host_thread->start();
  e.sim.run();
  // Everything the simulator could run has run. Programs still producing (their peers stopped:
  // an OOM, an error) would wait for room in their queues forever: unblock them.
  for (auto& r : e.ranks) r->queue.abort();
  for (auto& t : threads) t.join();
  for (auto& rank : e.ranks) {
    if (rank->error) std::rethrow_exception(rank->error);
  }
  if (e.tracer && e.tracer->device_work()) {
    for (auto& rank : e.ranks) {
      for (std::uint32_t s = 0; s < rank->device_scopes.size(); ++s) rank->close_scopes(s, 0);
    }
  }

  EngineResult result;
  for (auto& rank : e.ranks) {
    if (rank->oom && !result.oom) result.oom = rank->oom;
  }
  for (auto& rank : e.ranks) {
    RankResult r = std::move(rank->result);
    r.host_finish_ps = rank->host_thread->finish_ps();
    r.host_busy_ps = rank->host_thread->busy_ps();
    r.host_blocked_ps = rank->host_thread->blocked_ps();
    r.memory = rank->allocator.stats();
    if (!result.oom && !rank->host_thread->finished()) {
      throw std::logic_error(fmt::format("rank {}'s program stalled: a collective or send/recv that its peers never "
                                         "joined",
                                         rank->index));
    }
    result.end_ps = std::max(result.end_ps, r.host_finish_ps);
    result.ranks.push_back(std::move(r));
  }
  result.end_ps = std::max(result.end_ps, e.sim.now());
  result.events = e.sim.events_executed();
  result.solo_kernels = e.executor->solo_kernels();
  result.converted_kernels = e.executor->converted_kernels();
  return result;
}

}  // namespace syntorch::runtime
