// A rank's producer side: what its program asks for, as host actions on its queue.

#include "rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "communicator.hpp"

namespace syntorch::runtime::detail {

Rank::Rank(EngineCore& core, int index, std::uint32_t device, std::uint64_t capacity_bytes,
           std::optional<std::uint64_t> base_address)
    : core_(core),
      index_(index),
      device_(device),
      allocator_(capacity_bytes, base_address.value_or(os::CachingAllocator::kDefaultBaseAddress)) {
  const std::vector<int>& shown = core.options.trace_ranks;
  if (core.tracer && (shown.empty() || std::find(shown.begin(), shown.end(), index) != shown.end())) {
    tracer_ = core.tracer.get();
    trace_device_ = core.trace_device;
    trace_memory_ = core.trace_memory;
  }
}

void Rank::bind() {
  const std::uint32_t n = core_.streams.total;
  for (std::uint32_t s = 0; s < n; ++s) streams_.push_back(std::make_unique<os::Stream>(core_.sim, device_, s));
  std::vector<os::Stream*> ptrs;
  for (auto& s : streams_) ptrs.push_back(s.get());
  slots_.resize(n);
  host_thread_ = std::make_unique<os::HostThread>(core_.sim, queue_, ptrs, core_.costs.sync_ps);
  result_.rank = index_;
  result_.device = device_;
  result_.device_name = core_.machine.devices()[device_].name;
  next_stream_ = n;
  pending_flows_.resize(n);
  last_seq_.assign(n, 0);
  device_scopes_.resize(n);
}

const std::string* Rank::intern(std::string_view name) {
  auto it = names_.find(name);
  if (it == names_.end()) it = names_.emplace(name).first;
  return &*it;
}

const CommCall* Rank::intern_call(const CommCall& call) {
  auto& slot = calls_[call];
  if (!slot) slot = std::make_unique<const CommCall>(call);
  return slot.get();
}

// ---- memory ----

std::uint32_t Rank::allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) {
  const DeviceMemoryCalls before = device_memory_calls();
  auto block = allocator_.allocate(bytes, use);
  charge_device_memory_calls(before);
  if (!block) {
    OomReport report;
    report.rank = index_;
    report.device_name = core_.machine.devices()[device_].name;
    report.requested_bytes = bytes;
    report.requested_for = std::string(what);
    report.memory = allocator_.stats();
    std::map<std::string, std::uint64_t> by_name;
    for (const Live& l : live_) {
      if (l.name) by_name[*l.name] += l.bytes;
    }
    report.largest.assign(by_name.begin(), by_name.end());
    std::stable_sort(report.largest.begin(), report.largest.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (report.largest.size() > 8) report.largest.resize(8);
    oom_ = std::move(report);
    throw OutOfMemory(index_, bytes, std::string(what));
  }
  if (live_.size() <= block->id) live_.resize(block->id + 1);
  live_[block->id] = Live{block->size, intern(what)};
  if (trace_memory_) mark_memory(true, live_[block->id], block->id);
  return block->id;
}

void Rank::free(std::uint32_t handle) {
  const DeviceMemoryCalls before = device_memory_calls();
  allocator_.free(handle);
  quietly([&] { charge_device_memory_calls(before); });
  if (handle < live_.size()) {
    if (trace_memory_) quietly([&] { mark_memory(false, live_[handle], handle); });
    live_[handle] = Live{};
  }
}

void Rank::empty_cache() {
  const DeviceMemoryCalls before = device_memory_calls();
  allocator_.empty_cache();
  charge_device_memory_calls(before);
}

void Rank::set_caching_allocator(bool enabled) {
  const DeviceMemoryCalls before = device_memory_calls();
  allocator_.set_caching(enabled);
  charge_device_memory_calls(before);
}

// cudaMalloc costs the host its time; cudaFree first waits for the device (it synchronises), then
// costs its time. Memory is taken when the program runs, so these bypass graph capture (a graph's
// pool is allocated while capturing); with no cost configured nothing is pushed.
void Rank::charge_device_memory_calls(DeviceMemoryCalls before) {
  // While a graph is captured its memory comes from the graph's pool, set up with the capture.
  if (graph_.capturing()) return;
  const DeviceMemoryCalls after = device_memory_calls();
  const std::uint64_t mallocs = after.mallocs - before.mallocs;
  const std::uint64_t frees = after.frees - before.frees;
  if (frees > 0 && core_.costs.free_ps > 0) {
    os::HostAction sync;
    sync.op = os::HostAction::Sync{};
    if (tracer_) sync.set_note<&Rank::note_span>(this, intern("cudaFree (device sync)"));
    queue_.push(sync);
    os::HostAction a;
    a.host_ps = core_.costs.free_ps * frees;
    if (tracer_) a.set_note<&Rank::note_span>(this, intern("cudaFree"));
    queue_.push(a);
  }
  if (mallocs > 0 && core_.costs.malloc_ps > 0) {
    os::HostAction a;
    a.host_ps = core_.costs.malloc_ps * mallocs;
    if (tracer_) a.set_note<&Rank::note_span>(this, intern("cudaMalloc"));
    queue_.push(a);
  }
}

RankContext::DeviceProperties Rank::device_properties() const {
  const hw::Device& d = core_.machine.devices()[device_];
  return {.name = core_.machine.config().name,
          .total_memory_bytes = allocator_.stats().capacity_bytes,
          .multi_processor_count = d.compute.units,
          .l2_cache_bytes = static_cast<std::uint64_t>(d.cache.size_bytes),
          .clock_hz = d.compute.clock_hz,
          .bf16 = d.compute.matrix_ops_per_cycle.count(DType::bf16) > 0};
}

void Rank::stage_host_copy(std::uint64_t bytes, std::string_view name) {
  if (host_elsewhere_ || core_.costs.memcpy_bytes_per_ps <= 0 || bytes == 0) return;
  os::HostAction a;
  a.host_ps = static_cast<sim::TimePs>(std::ceil(static_cast<double>(bytes) / core_.costs.memcpy_bytes_per_ps));
  if (tracer_) a.set_note<&Rank::note_span>(this, intern(name));
  push(a);
}

// A zero-cost host action that shows an allocation or free at its place on the host timeline.
// It bypasses graph capture: memory is allocated when the program runs, captured or not.
void Rank::mark_memory(bool allocated, const Live& l, std::uint32_t handle) {
  os::HostAction a;
  a.set_note<&Rank::note_memory>(this, l.name);
  a.detail = os::HostAction::MemoryChange{.allocated = allocated,
                                          .handle = handle,
                                          .bytes = l.bytes,
                                          .allocated_bytes = allocator_.stats().allocated_bytes,
                                          .reserved_bytes = allocator_.stats().reserved_bytes};
  queue_.push(a);
}

// ---- ops and kernels ----

const std::vector<LoweredKernel>& Rank::lower(const OpDesc& op) {
  if (const auto it = lowered_.find(op); it != lowered_.end()) return *it->second;
  // Lowered before it is remembered: an op the device refuses leaves nothing behind, so a
  // program that catches the error (a Python session) can issue it again.
  const LoweredKernels* kernels;
  if (own_dispatcher_) {
    own_.push_back(lower_kernels(*own_dispatcher_, op, device_, tracer_ != nullptr));
    kernels = own_.back().get();
  } else {
    kernels = &core_.kernels->lower(op, device_);
  }
  return *lowered_.emplace(op, kernels).first->second;
}

// The record a traced launch's note reads: the op's name and shape. `describe` gives the shape
// of an op without an OpDesc; it runs only when the record is made.
template <class Describe>
const OpRecord* Rank::op_record(std::string_view name, const void* what, const OpDesc* op, Describe&& describe) {
  const std::string* n = intern(name);
  auto& r = op_records_[{n, what}];
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

// What a communication call moves, for its op span.
std::string Rank::describe_call(const CommCall& call) const {
  if (call.kind == CommCall::Kind::send) return fmt::format("{} bytes to rank {}", call.bytes, call.target);
  if (call.kind == CommCall::Kind::recv) return fmt::format("{} bytes from rank {}", call.bytes, call.target);
  if (call.kind == CommCall::Kind::to_device) return fmt::format("{} bytes host to device", call.bytes);
  if (call.kind == CommCall::Kind::to_host) return fmt::format("{} bytes device to host", call.bytes);
  if (call.kind == CommCall::Kind::to_peer) return fmt::format("{} bytes to rank {}'s device", call.bytes, call.target);
  if (call.kind == CommCall::Kind::from_peer) {
    return fmt::format("{} bytes from rank {}'s device", call.bytes, call.target);
  }
  return fmt::format("{} of {} bytes over ranks {}", op_name(call.op), call.bytes,
                     fmt::join(core_.comm->group(GroupId{call.target}).ranks, ","));
}

void Rank::note_launches(os::HostAction& a, const OpRecord* record, std::size_t i, std::size_t n) {
  a.set_note<&Rank::note_launch>(this, record);
  a.detail = os::HostAction::LaunchOf{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(n)};
}

os::HostAction Rank::launch_action(os::WorkItem work, std::uint32_t stream) const {
  os::HostAction a;
  a.op = os::HostAction::Launch{static_cast<std::uint16_t>(stream), core_.costs.latency_ps, work};
  a.host_ps = core_.costs.dispatch_ps + core_.costs.launch_ps;
  return a;
}

void Rank::set_policy(const KernelPolicy& policy) {
  auto dispatcher = std::make_unique<Dispatcher>(core_.machine, policy);  // checks it first
  lowered_.clear();
  // Generated kernels lowered under the old policy: kept (queued launches may point to them), not
  // found again.
  for (auto& [op, by_name] : named_) {
    for (auto& [name, kernels] : by_name) own_.push_back(std::move(kernels));
  }
  named_.clear();
  own_dispatcher_ = std::move(dispatcher);
}

// A kernel named by its launch (OpType::kernels_named_by_launch: a compiler's generated kernels)
// is shown under that name: its lowering copied once per shape and name.
const std::vector<LoweredKernel>& Rank::lower_named(const OpDesc& op, std::string_view name) {
  ByName& by_name = named_[op];
  if (const auto it = by_name.find(name); it != by_name.end()) return *it->second;
  auto copy = std::make_unique<LoweredKernels>(lower(op));
  for (LoweredKernel& k : *copy) k.kernel.name = std::string(name);
  return *by_name.emplace(std::string(name), std::move(copy)).first->second;
}

void Rank::launch(const OpDesc& op, std::string_view name) {
  const std::vector<LoweredKernel>& kernels = kernels_named_by_launch(op.kind) ? lower_named(op, name) : lower(op);
  const OpRecord* record = tracer_ ? op_record(name, &kernels, &op, [] { return std::string(); }) : nullptr;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    os::HostAction a = launch_action(os::work_item<&Rank::start_kernel>(this, &kernels[i]), current_stream_);
    a.host_ps = core_.costs.launch_ps + (i == 0 ? core_.costs.dispatch_ps : 0);
    if (record) note_launches(a, record, i, kernels.size());
    push(a);
  }
}

RankContext::OpMemory Rank::op_memory(const OpDesc& op) {
  OpMemory m;
  for (const LoweredKernel& k : lower(op)) {
    m.workspace_bytes += static_cast<std::uint64_t>(k.kernel.workspace_bytes);
    m.saved_bytes += static_cast<std::uint64_t>(k.kernel.saved_bytes);
  }
  return m;
}

void Rank::host_op(std::string_view name) {
  if (host_elsewhere_) return;
  if (!tracer_) {
    // Nothing to show: its time goes to the next action (none while capturing a graph).
    if (!graph_.capturing()) queue_.add_host_time(core_.costs.dispatch_ps);
    return;
  }
  os::HostAction a;
  a.host_ps = core_.costs.dispatch_ps;
  if (tracer_) a.set_note<&Rank::note_span>(this, intern(name));
  push(a);
}

void Rank::host_work(double seconds, std::string_view name) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxSleepUntilS) {
    throw std::invalid_argument(fmt::format("host_work: expected 0 .. {:g} seconds, got {}", kMaxSleepUntilS, seconds));
  }
  if (graph_.capturing()) throw std::logic_error("host_work: the host cannot work while capturing a graph");
  if (host_elsewhere_ || seconds == 0) return;
  os::HostAction a;
  a.host_ps = static_cast<sim::TimePs>(std::llround(seconds * 1e12));
  if (tracer_) a.set_note<&Rank::note_span>(this, intern(name));
  push(a);
}

// ---- communication and copies ----

void Rank::check_bytes(std::uint64_t bytes, std::string_view name) const {
  if (bytes == 0 || bytes > kMaxCallBytes) {
    throw std::invalid_argument(fmt::format("{}: {} bytes per rank is outside 1 B .. 1 TiB", name, bytes));
  }
}

void Rank::comm(const CommCall* call, std::string_view name) {
  os::HostAction a = launch_action(os::work_item<&Rank::start_comm>(this, call), current_stream_);
  if (tracer_) note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
  push(a);
}

void Rank::collective(const OpDesc& op, GroupId group, std::string_view name) {
  if (!is_collective(op.kind) || op.kind == OpKind::sendrecv) {
    throw std::invalid_argument(fmt::format("{}: not a collective op", name));
  }
  if (op.kind != OpKind::alltoall || op.bytes > 0) check_bytes(op.bytes, name);  // all-to-allv: may send nothing
  const Group& g = core_.comm->group(group);
  if (!op.splits.empty()) {
    // An uneven all-to-all: this rank's row, a share per member summing to what it sends.
    std::uint64_t sum = 0;
    for (std::uint64_t b : op.splits) sum += b;
    if (op.kind != OpKind::alltoall || op.splits.size() != g.ranks.size() || sum != op.bytes) {
      throw std::invalid_argument(fmt::format("{}: {} shares summing to {} bytes for a group of {} sending {} bytes",
                                              name, op.splits.size(), sum, g.ranks.size(), op.bytes));
    }
  }
  if (std::find(g.ranks.begin(), g.ranks.end(), index_) == g.ranks.end()) {
    throw std::invalid_argument(fmt::format("{}: rank {} is not in group {}", name, index_, g.name));
  }
  if (g.ranks.size() == 1) return;  // a group of one: nothing to do
  comm(intern_call({CommCall::Kind::collective, op.kind, group.value, op.bytes, op.splits}), name);
}

void Rank::point_to_point(CommCall::Kind what, int peer, std::uint64_t bytes, std::string_view name) {
  check_bytes(bytes, name);
  if (peer < 0 || peer >= core_.world_size || peer == index_) {
    throw std::invalid_argument(
        fmt::format("{}: peer rank {} is not another rank of the {}", name, peer, core_.world_size));
  }
  if (core_.mirrored(peer)) {
    throw std::invalid_argument(fmt::format("{}: peer rank {} mirrors rank {} and runs no program of its own; "
                                            "simulate every replica to send between replicas",
                                            name, peer, core_.options.mirror_of[static_cast<std::size_t>(peer)]));
  }
  const CommCall* call = intern_call({what, OpKind::sendrecv, static_cast<std::uint32_t>(peer), bytes, {}});
  // A send: on the compute stream, a mark that hands it to the send stream once the work launched
  // before it is done; the compute stream goes on without waiting. A receive: on the receive
  // stream, and on the compute stream a wait for it.
  const bool send = what == CommCall::Kind::send;
  os::HostAction a = send ? launch_action(os::work_item<&Rank::start_fork_send>(this, call), current_stream_)
                          : launch_action(os::work_item<&Rank::start_comm>(this, call), core_.streams.recv);
  if (tracer_) note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
  push(a);
  if (send) return;
  os::HostAction join = launch_action(os::work_item<&Rank::start_join_recv>(this, recvs_issued_++), current_stream_);
  join.host_ps = 0;  // no call of its own: the receive's
  if (tracer_) note_launches(join, op_record("wait for recv", nullptr, nullptr, [] { return std::string(); }), 0, 1);
  push(join);
}

void Rank::send(int peer, std::uint64_t bytes, std::string_view name) {
  point_to_point(CommCall::Kind::send, peer, bytes, name);
}
void Rank::recv(int peer, std::uint64_t bytes, std::string_view name) {
  point_to_point(CommCall::Kind::recv, peer, bytes, name);
}

void Rank::copy(bool to_device, std::uint64_t bytes, std::string_view name) {
  check_bytes(bytes, name);
  if (!core_.machine.host_of_device(device_)) {
    // A config problem: the program copies to or from the host, and the device is linked to none.
    Diagnostics d;
    d.error(core_.machine.config().file, "/components",
            fmt::format("{} copies between {} and the host, but no host component is linked to it (add a host and "
                        "a link such as PCIe between them)",
                        name, core_.machine.devices()[device_].name));
    throw InputError(std::move(d));
  }
  const CommCall* call =
      intern_call({to_device ? CommCall::Kind::to_device : CommCall::Kind::to_host, OpKind::copy, 0, bytes, {}});
  os::HostAction a = launch_action(os::work_item<&Rank::start_copy>(this, call), current_stream_);
  if (tracer_) note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
  push(a);
}

void Rank::peer_copy(bool to_peer, int peer, std::uint64_t bytes, std::string_view name) {
  check_bytes(bytes, name);
  // This rank and those that mirror it, each to the rank at its own offset from `peer`.
  for (int r = 0; r < core_.world_size; ++r) {
    if (!core_.stands_for(index_, r)) continue;
    const int to = peer + (r - index_);
    if (to < 0 || to >= core_.world_size || to == r) {
      throw std::invalid_argument(fmt::format("{}: rank {} would copy {} rank {}, which is {} of the {} ranks", name, r,
                                              to_peer ? "to" : "from", to, to == r ? "itself" : "not one",
                                              core_.world_size));
    }
  }
  const CommCall* call = intern_call({to_peer ? CommCall::Kind::to_peer : CommCall::Kind::from_peer, OpKind::copy,
                                      static_cast<std::uint32_t>(peer), bytes, {}});
  os::HostAction a = launch_action(os::work_item<&Rank::start_copy>(this, call), current_stream_);
  if (tracer_) note_launches(a, op_record(name, call, nullptr, [&] { return describe_call(*call); }), 0, 1);
  push(a);
}

GroupId Rank::new_group(const std::vector<int>& ranks) { return core_.comm->new_group(ranks); }

// ---- synchronisation, graphs, scopes ----

void Rank::synchronize(std::string_view reason) {
  if (graph_.capturing()) throw std::logic_error(fmt::format("{}: cannot synchronise while capturing a graph", reason));
  os::HostAction a;
  a.op = os::HostAction::Sync{};
  a.set_note<&Rank::note_span>(this, intern(reason));
  push(a);
}

void Rank::graph_begin() { graph_.begin(); }

std::uint64_t Rank::graph_end() { return graph_.end(); }

void Rank::graph_launch(std::uint64_t graph) {
  if (graph_.capturing()) throw std::logic_error("cudaGraphLaunch: cannot launch a graph while capturing one");
  os::HostAction launch;
  launch.host_ps = core_.costs.graph_ps;
  launch.set_note<&Rank::note_span>(this, intern("cudaGraphLaunch"));
  graph_.launch(graph, launch, [&](const os::HostAction& a) { queue_.push(a); });
}

void Rank::scope_begin(std::string_view name) {
  os::HostAction a;
  a.set_note<&Rank::note_scope_begin>(this, intern(name));
  push(a);  // inside a capture, with the captured work: around it when the graph is launched
}

void Rank::scope_end() {
  os::HostAction a;
  a.set_note<&Rank::note_scope_end>(this);
  quietly([&] { push(a); });
}

}  // namespace syntorch::runtime::detail
