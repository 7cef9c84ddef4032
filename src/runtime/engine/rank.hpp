#pragma once
// One rank of a run: the RankContext its program calls (on the program's own thread: memory,
// launches, communication, synchronisation, graphs, scopes), turned into host actions through a
// bounded queue; and, on the simulator's side, its host thread, device streams and what each
// stream runs now, with the accounting of where its time went. Kernels are lowered once per
// distinct op and device spec (EngineCore::kernels) and shared by every launch of that op.
// Members are marked by the side that owns them: the producer (program thread) or the
// consumer (simulator); pointers handed from one to the other point at nodes that never move.

#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core.hpp"
#include "kernel_cache.hpp"
#include "syntorch/os/caching_allocator.hpp"
#include "syntorch/os/graph_capture.hpp"
#include "syntorch/os/host_thread.hpp"
#include "syntorch/os/stream.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/process_filter.hpp"

namespace syntorch::runtime::detail {

// A call that moves data, as a rank issued it: a collective over a group, one side of a
// send/recv with a peer, or a copy between the device and its host. Interned per rank (calls
// repeat every layer), so a work item carries a reference to one that never changes.
struct CommCall {
  enum class Kind : std::uint8_t { collective, send, recv, to_device, to_host, to_peer, from_peer };
  Kind kind = Kind::collective;
  OpKind op = OpKind::allreduce;
  std::uint32_t target = 0;  // the group (collective) or the peer's global rank (send, recv, peer copies)
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> splits;  // uneven shares (OpDesc::splits), empty when even
  bool operator==(const CommCall&) const = default;
};
struct CommCallHash {
  std::size_t operator()(const CommCall& c) const {
    std::uint64_t h = c.bytes * 0x9e3779b97f4a7c15ULL ^ (std::uint64_t{c.target} << 16) ^
                      (static_cast<std::uint64_t>(c.op) << 8) ^ static_cast<std::uint64_t>(c.kind);
    for (std::uint64_t x : c.splits) hash_combine(h, x);
    return std::hash<std::uint64_t>{}(h);
  }
};
inline constexpr std::uint64_t kMaxCallBytes = (std::uint64_t{1} << 40) - 1;

// An op as traces show it: its framework name, shape and dtype.
struct OpRecord {
  const std::string* name = nullptr;
  std::string shape;
  std::string_view dtype;
};

class Rank final : public RankContext {
 public:
  // The device's memory of `capacity_bytes` starts at `base_address` (the config's start_address) or
  // where CUDA's device heap does.
  Rank(EngineCore& core, int index, std::uint32_t device, std::uint64_t capacity_bytes,
       std::optional<std::uint64_t> base_address);

  // ---- RankContext (the program's thread) ----
  int rank() const override { return index_; }
  int world_size() const override { return core_.world_size; }
  std::uint32_t allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) override;
  void free(std::uint32_t handle) override;
  os::AllocatorStats memory_stats() const override { return allocator_.stats(); }
  void set_memory_use(std::uint32_t handle, os::MemoryUse use) override { allocator_.set_use(handle, use); }
  void empty_cache() override;
  void reset_peak_memory_stats() override { allocator_.reset_peak_stats(); }
  void set_caching_allocator(bool enabled) override;
  DeviceProperties device_properties() const override;
  void stage_host_copy(std::uint64_t bytes, std::string_view name) override;
  void set_policy(const KernelPolicy& policy) override;
  void launch(const OpDesc& op, std::string_view name) override;
  OpMemory op_memory(const OpDesc& op) override;
  void host_op(std::string_view name) override;
  void host_work(double seconds, std::string_view name) override;
  bool set_host_work_elsewhere(bool elsewhere) override { return std::exchange(host_elsewhere_, elsewhere); }
  void collective(const OpDesc& op, GroupId group, std::string_view name) override;
  void send(int peer, std::uint64_t bytes, std::string_view name) override;
  void recv(int peer, std::uint64_t bytes, std::string_view name) override;
  void copy_host_to_device(std::uint64_t bytes, std::string_view name) override { copy(true, bytes, name); }
  void copy_device_to_host(std::uint64_t bytes, std::string_view name) override { copy(false, bytes, name); }
  void copy_to_peer(int peer, std::uint64_t bytes, std::string_view name) override { peer_copy(true, peer, bytes, name); }
  void copy_from_peer(int peer, std::uint64_t bytes, std::string_view name) override {
    peer_copy(false, peer, bytes, name);
  }
  void synchronize(std::string_view reason) override;
  void graph_begin() override;
  std::uint64_t graph_end() override;
  void graph_launch(std::uint64_t graph) override;
  void scope_begin(std::string_view name) override;
  void scope_end() override;
  GroupId new_group(const std::vector<int>& ranks) override;
  std::uint32_t new_stream() override;
  void set_stream(std::uint32_t stream) override;
  std::uint32_t current_stream() const override { return current_stream_; }
  std::uint64_t record_event(std::uint32_t stream) override;
  void wait_event(std::uint32_t stream, std::uint64_t event) override;
  void synchronize_event(std::uint64_t event) override;
  void synchronize_stream(std::uint32_t stream) override;
  double host_time_s() override;
  void sleep_until_s(double time_s) override;
  double event_time_s(std::uint64_t event) override;
  bool stream_idle(std::uint32_t stream) override;
  std::uint64_t trace_window_begin(const std::string& path) override;
  std::string trace_window_end(std::uint64_t window) override;

  // ---- the simulator's side ----
  // Builds the streams and host thread (before the program starts).
  void bind();
  int index() const { return index_; }
  std::uint32_t device() const { return device_; }
  // This rank's trace (null when there is none or it does not show this rank: EngineOptions::
  // trace_ranks), and whether device work and memory go in it.
  EngineTrace* tracer() const { return tracer_; }
  bool trace_device() const { return trace_device_; }
  os::ActionQueue& queue() { return queue_; }
  os::HostThread& host_thread() { return *host_thread_; }
  os::Stream& stream(std::uint32_t s) { return *streams_[s]; }
  const os::CachingAllocator& allocator() const { return allocator_; }
  RankResult& result() { return result_; }
  std::exception_ptr& error() { return error_; }
  const std::optional<OomReport>& oom() const { return oom_; }

  // Stream items (work_item targets).
  void start_kernel(const LoweredKernel& kernel, os::Stream& stream);
  void on_kernel_done(std::uint64_t stream);
  void start_comm(const CommCall& call, os::Stream& stream);
  void start_fork_send(const CommCall& call, os::Stream& stream);
  void start_join_recv(std::uint64_t receive, os::Stream& stream);
  void start_copy(const CommCall& call, os::Stream& stream);
  void start_event_record(std::uint64_t event, os::Stream& stream);
  void start_event_wait(std::uint64_t event, os::Stream& stream);
  // Host waits (HostAction::Wait targets).
  void block_on_event(std::uint64_t event, os::Stream& stream);
  void block_on_stream(std::uint64_t unused, os::Stream& stream);

  // When a communication or copy started on a stream, and the flow from its op (traces).
  struct Slot {
    const LoweredKernel* kernel = nullptr;
    KernelRun run;
    sim::TimePs comm_start_ps = 0;
    std::uint64_t flow_id = 0;  // from the launching op, when traced
    std::uint64_t after_seq = 0;
  };
  Slot& slot(std::uint32_t stream) { return slots_[stream]; }

  // Receives: one has arrived; the compute stream's wait for one.
  void receive_done(sim::TimePs now);

  // Traces (notes.cpp). An item starts on `stream` at `now`: its flow id (0 when untraced); the
  // device scopes around it change where its scopes differ from the previous item's.
  std::uint64_t begin_item(std::uint32_t stream, sim::TimePs now);
  void end_item(std::uint32_t stream, sim::TimePs end);
  // Ends the device scopes from depth `from` down, at the last item's end.
  void close_scopes(std::uint32_t stream, std::size_t from);
  void close_all_scopes();
  // The last device span on each stream, and the spans of receives not yet joined.
  std::vector<std::uint64_t>& last_seq() { return last_seq_; }
  std::deque<std::uint64_t>& recv_seqs() { return recv_seqs_; }
  // A send moves to the send stream: its pending flow goes with it, after the computation it
  // waited for on `from`.
  void hand_over_flow(std::uint32_t from, std::uint32_t to);

 private:
  // Host-action notes (notes.cpp).
  void note_span(const std::string& name, const os::HostAction& a, sim::TimePs begin, sim::TimePs end);
  void note_launch(const OpRecord& record, const os::HostAction& a, sim::TimePs begin, sim::TimePs end);
  void note_memory(const std::string& name, const os::HostAction& a, sim::TimePs at, sim::TimePs);
  void note_scope_begin(const std::string& name, const os::HostAction& a, sim::TimePs begin, sim::TimePs);
  void note_scope_end(const os::HostAction& a, sim::TimePs end, sim::TimePs);
  void note_new_stream(const os::HostAction& a, sim::TimePs, sim::TimePs);
  // The host clock's answers to a program waiting for them (clock.cpp).
  void note_clock(const os::HostAction& a, sim::TimePs at, sim::TimePs);
  void note_event_time(const std::uint64_t& event, const os::HostAction& a, sim::TimePs, sim::TimePs);
  void note_stream_idle(const std::uint64_t& stream, const os::HostAction& a, sim::TimePs, sim::TimePs);
  void on_host_stream_idle();
  void trace_join(std::uint32_t stream, sim::TimePs begin, sim::TimePs end, std::uint64_t flow);

  // Producer helpers (rank.cpp).
  struct Live {
    std::uint64_t bytes = 0;
    const std::string* name = nullptr;
  };
  const std::string* intern(std::string_view name);
  const CommCall* intern_call(const CommCall& call);
  void push(const os::HostAction& a) {
    if (!graph_.record(a)) queue_.push(a);
  }
  // For calls that destructors make (a tensor's free, a scope's or a graph's end): once the run
  // has stopped listening, the action is dropped instead of thrown out of a noexcept destructor;
  // the program unwinds at its next call.
  template <class Push>
  static void quietly(Push&& push) {
    try {
      push();
    } catch (const os::QueueAborted&) {
    }
  }
  void mark_memory(bool allocated, const Live& l, std::uint32_t handle);
  // The host cost of the cudaMalloc and cudaFree calls the allocator made since `before` (two
  // counters: every allocation and free reads them, so the whole statistics are not copied).
  struct DeviceMemoryCalls {
    std::uint64_t mallocs = 0, frees = 0;
  };
  DeviceMemoryCalls device_memory_calls() const {
    return {allocator_.stats().device_allocations, allocator_.stats().device_frees};
  }
  void charge_device_memory_calls(DeviceMemoryCalls before);
  const std::vector<LoweredKernel>& lower(const OpDesc& op);
  const std::vector<LoweredKernel>& lower_named(const OpDesc& op, std::string_view name);
  template <class Describe>
  const OpRecord* op_record(std::string_view name, const void* what, const OpDesc* op, Describe&& describe);
  std::string describe_call(const CommCall& call) const;
  void note_launches(os::HostAction& a, const OpRecord* record, std::size_t i, std::size_t n);
  // A launch call of `work` on `stream`: its host cost and readiness.
  os::HostAction launch_action(os::WorkItem work, std::uint32_t stream) const;
  void comm(const CommCall* call, std::string_view name);
  void point_to_point(CommCall::Kind what, int peer, std::uint64_t bytes, std::string_view name);
  void copy(bool to_device, std::uint64_t bytes, std::string_view name);
  void peer_copy(bool to_peer, int peer, std::uint64_t bytes, std::string_view name);
  void check_bytes(std::uint64_t bytes, std::string_view name) const;
  void check_stream(std::uint32_t stream, std::string_view what) const;
  // A CUDA API call on the host (an event record or wait): its host cost, shown as `name`.
  os::HostAction api_call(std::string_view name, os::WorkItem work, std::uint32_t stream);

  EngineCore& core_;
  int index_;
  std::uint32_t device_;
  EngineTrace* tracer_ = nullptr;
  bool trace_device_ = false;
  bool trace_memory_ = false;

  // ---- producer side ----
  os::CachingAllocator allocator_;
  os::ActionQueue queue_;
  // The kernels of each op this rank has launched (records of the shared cache, or of own_).
  std::unordered_map<OpDesc, const LoweredKernels*, OpDescHash> lowered_;
  // A policy the program set (set_policy): its dispatcher, and what it lowered (kept while
  // launched actions may point to it, across later policies too).
  std::unique_ptr<Dispatcher> own_dispatcher_;
  std::vector<std::unique_ptr<LoweredKernels>> own_;
  // Generated kernels' lowerings under their compiler's names (lower_named), by shape, then name
  // (looked up by string_view: a launch allocates nothing).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using ByName = std::unordered_map<std::string, std::unique_ptr<LoweredKernels>, NameHash, std::equal_to<>>;
  std::unordered_map<OpDesc, ByName, OpDescHash> named_;
  std::unordered_map<CommCall, std::unique_ptr<const CommCall>, CommCallHash> calls_;
  std::map<std::pair<const void*, const void*>, std::unique_ptr<OpRecord>> op_records_;  // by (name, what)
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_set<std::string, StringHash, std::equal_to<>> names_;  // node-stable: pointers travel in actions
  std::vector<Live> live_;  // by allocator block id
  os::GraphCapture graph_;
  std::uint64_t recvs_issued_ = 0;
  std::uint32_t current_stream_ = 0;
  std::uint32_t next_stream_ = 0;   // the id the next new stream gets
  std::uint64_t events_recorded_ = 0;
  bool host_elsewhere_ = false;  // set_host_work_elsewhere
  std::exception_ptr error_;
  std::optional<OomReport> oom_;
  // Profiler windows (profiler.cpp): made here, then used by the simulator only through the
  // actions that carry them (a deque: they never move).
  struct TraceWindow {
    std::unique_ptr<trace::Sink> writer;
    std::ostringstream summary_text;
    std::unique_ptr<trace::ConsoleSummary> summary;
    std::unique_ptr<trace::ProcessFilter> filter;
    bool open = false;
    std::string error;  // a failure to write the file, for the program to throw
  };
  std::deque<TraceWindow> windows_;
  void note_window_begin(const TraceWindow& w, const os::HostAction& a, sim::TimePs begin, sim::TimePs end);
  void note_window_end(const TraceWindow& w, const os::HostAction& a, sim::TimePs begin, sim::TimePs end);

  // ---- consumer side ----
  std::vector<std::unique_ptr<os::Stream>> streams_;
  // Per stream: what it runs now. A deque: a stream made while kernels run must not move the
  // slots whose KernelRun the executor is writing (references stay valid as it grows).
  std::deque<Slot> slots_;
  std::unique_ptr<os::HostThread> host_thread_;
  RankResult result_;
  struct OpenScope {
    const std::string* name;
    sim::TimePs begin_ps;
    std::uint64_t instance;  // distinguishes two scopes of the same name (two decode steps)
  };
  std::vector<OpenScope> scope_stack_;
  std::uint64_t scopes_opened_ = 0;
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
  std::vector<std::deque<Pending>> pending_flows_;  // per stream
  std::vector<DeviceScopes> device_scopes_;         // per stream
  // Receives done so far, and the compute-stream wait for one not yet done.
  std::uint64_t recvs_done_ = 0;
  std::uint64_t join_seq_ = 0;
  std::uint32_t join_stream_ = 0;
  bool join_waiting_ = false;
  sim::TimePs join_start_ps_ = 0;
  std::uint64_t join_flow_ = 0;
  std::vector<std::uint64_t> last_seq_;
  std::deque<std::uint64_t> recv_seqs_;
  // Events: when each completed (by id; kNotDone until then), the streams waiting for each, and
  // the one the host waits for (0: none).
  static constexpr sim::TimePs kNotDone = ~sim::TimePs{0};
  bool event_done(std::uint64_t event) const { return event < event_done_ps_.size() && event_done_ps_[event] != kNotDone; }
  std::vector<sim::TimePs> event_done_ps_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> event_waiters_;
  std::uint64_t host_event_ = 0;
  std::uint64_t queried_ = 0;  // producer: the event or stream a query asks about, read by its note
  std::vector<std::uint64_t> op_flows_;
  std::vector<sim::TimePs> op_flow_ps_;
  sim::TimePs op_begin_ps_ = 0;
};

}  // namespace syntorch::runtime::detail
