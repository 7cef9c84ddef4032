// Compiled regions: a context in front of the rank's own that records what the program launches
// inside torch.compile's graphs and launches the fused plan instead.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../internal.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/compile.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::torch::compile {

namespace {

// "aten.native_layer_norm.default" -> "native_layer_norm"; "aten::add" -> "add".
std::string short_name(std::string_view op) {
  for (std::string_view prefix : {"aten.", "aten::", "syntorch.", "syntorch::"}) {
    if (op.starts_with(prefix)) {
      op.remove_prefix(prefix.size());
      break;
    }
  }
  if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  return std::string(op);
}

// A backward node's name as the ATen op its kernels compute: "NativeLayerNormBackward0" ->
// "native_layer_norm_backward".
std::string node_op_name(std::string_view node) {
  while (!node.empty() && node.back() >= '0' && node.back() <= '9') node.remove_suffix(1);
  std::string out;
  for (char c : node) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

// The region: every launch is held (with the op that made it and the buffers that op touched)
// until a flush plans and launches them; allocations and releases are seen on their way to the
// rank's context, so that the plan knows which intermediates nothing holds any more. Work the
// device must see in order (copies, collectives, events, synchronisation) flushes first.
class Region final : public runtime::RankContext, public OpRecorder {
 public:
  Region(runtime::RankContext& inner, RegionOptions options, OpRecorder* previous, bool backward)
      : inner_(inner), options_(std::move(options)), previous_(previous), backward_(backward) {}

  bool backward() const { return backward_; }
  std::uint64_t graph() const { return options_.graph_id; }
  OpRecorder* previous_recorder() const { return previous_; }

  // ---- the recording side ----
  void record(std::string_view op, std::span<const RecordedArg> args, std::span<const Tensor> outputs) override {
    if (previous_) previous_->record(op, args, outputs);
    if (backward_) return;  // the engine reports whole nodes
    RecordedOp r = claim(short_name(op));
    for (const RecordedArg& a : args) {
      if (a.kind == RecordedArg::Kind::tensor) add_use(r.reads, a.tensor);
      if (a.kind == RecordedArg::Kind::tensors) {
        for (const Tensor& t : a.tensors) add_use(r.reads, t);
      }
    }
    for (const Tensor& t : outputs) add_use(r.writes, t);
    if (!r.kernels.empty()) ops_.push_back(std::move(r));
  }
  void begin_op() override {
    if (previous_) previous_->begin_op();
    if (!backward_) seal_pending();  // launches before this op are not its own
  }
  void record_node(std::string_view name, std::span<const Tensor> reads, std::span<const Tensor> writes,
                   bool fusible) {
    RecordedOp r = claim(node_op_name(name));
    r.library = !fusible;
    for (const Tensor& t : reads) add_use(r.reads, t);
    for (const Tensor& t : writes) add_use(r.writes, t);
    if (!r.kernels.empty()) ops_.push_back(std::move(r));
  }
  // Launches no op has claimed yet stay as they are.
  void seal_pending() {
    if (pending_.empty()) return;
    RecordedOp r = claim("");
    r.opaque = true;
    ops_.push_back(std::move(r));
  }

  // A graph break the front end saw: counted even where no op precedes it.
  void graph_break(const std::string& reason) {
    stats_.break_reasons.push_back(reason);
    flush(false);
    new_graph_ = true;  // what follows is another graph (compiled, and counted, on its own)
  }
  // Launches what the region holds: at its end (`last`), at a graph break, or before device work
  // that must stay in order.
  void flush(bool last) {
    seal_pending();
    if (ops_.empty()) return;
    std::uint32_t index = kernel_index_;
    const std::vector<PlannedLaunch> plan = plan_fusion(ops_, buffers_, index, options_.fusion);
    kernel_index_ = index;
    std::size_t generated = 0;
    for (const PlannedLaunch& p : plan) generated += p.generated ? 1 : 0;
    for (const RecordedOp& r : ops_) stats_.eager_kernels += r.kernels.size();
    const std::size_t segment_ops = ops_.size();
    stats_.ops += segment_ops;
    stats_.generated_kernels += generated;
    stats_.launched_kernels += plan.size();
    // A CUDA graph holds the whole region: one that was flushed before its end launches as it is.
    const bool whole = last && stats_.segments == 0;
    ++stats_.segments;
    ops_.clear();
    std::uint64_t hash = 0x9e3779b97f4a7c15ULL;
    for (const PlannedLaunch& p : plan) {
      hash_combine(hash, runtime::OpDescHash{}(p.op));
      hash_combine(hash, std::hash<std::string>{}(p.name));
    }
    stats_.plan_hash = hash;
    flushing_ = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{flushing_};
    const bool starts_graph = std::exchange(new_graph_, false);
    if (starts_graph) ++stats_.graphs;
    if (options_.compiling) {
      // Each graph's fixed cost once, each segment's ops and generated kernels as they come.
      const double s = (starts_graph ? options_.costs.per_graph_s : 0.0) +
                       options_.costs.per_op_s * static_cast<double>(segment_ops) +
                       options_.costs.per_kernel_s * static_cast<double>(generated);
      stats_.compile_s += s;
      inner_.host_work(s, compile_span_);
    }
    using CudaGraph = RegionOptions::CudaGraph;
    if (whole && options_.cuda_graph == CudaGraph::replay && hash == options_.replay_plan_hash) {
      inner_.graph_launch(options_.replay_graph);
      stats_.replayed = true;
      return;
    }
    const bool capture = whole && options_.cuda_graph == CudaGraph::record;
    if (capture) inner_.graph_begin();
    try {
      // Each launch costs what an eager op's does (the wrapper's call, a Triton launcher or an
      // extern kernel's ATen call, then the launch); views and fused-away ops cost nothing.
      for (const PlannedLaunch& p : plan) inner_.launch(p.op, p.name);
    } catch (...) {
      if (capture) (void)inner_.graph_end();  // the rank does not stay capturing
      throw;
    }
    if (capture) {
      stats_.cuda_graph = inner_.graph_end();
      inner_.graph_launch(stats_.cuda_graph);
    }
  }
  // Device work that must stay in order comes: what the region holds goes first.
  void flush_for_device() {
    const std::size_t before = stats_.segments;
    flush(false);
    if (stats_.segments != before) ++stats_.device_flushes;
  }
  RegionStats finish() {
    flush(true);
    return std::move(stats_);
  }

  // ---- RankContext: forwarded, with the region's part ----
  RankContext* memory_owner() override { return inner_.memory_owner(); }
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::uint32_t allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) override {
    const std::uint32_t handle = inner_.allocate(bytes, use, what);
    buffer_of_[handle] = static_cast<std::uint32_t>(buffers_.size());
    buffers_.push_back(BufferState{.made_here = true});
    return handle;
  }
  void free(std::uint32_t handle) override {
    if (auto it = buffer_of_.find(handle); it != buffer_of_.end()) {
      buffers_[it->second].released = true;
      buffers_[it->second].released_at = ops_.size();
      buffer_of_.erase(it);
    }
    inner_.free(handle);
  }
  void set_memory_use(std::uint32_t handle, os::MemoryUse use) override { inner_.set_memory_use(handle, use); }
  os::AllocatorStats memory_stats() const override { return inner_.memory_stats(); }
  void empty_cache() override { inner_.empty_cache(); }
  void reset_peak_memory_stats() override { inner_.reset_peak_memory_stats(); }
  void set_caching_allocator(bool enabled) override { inner_.set_caching_allocator(enabled); }
  DeviceProperties device_properties() const override { return inner_.device_properties(); }
  void set_policy(const runtime::KernelPolicy& policy) override {
    flush_for_device();  // what is held was chosen under the old policy
    inner_.set_policy(policy);
  }
  std::uint32_t new_stream() override { return inner_.new_stream(); }
  void set_stream(std::uint32_t stream) override {
    flush_for_device();
    inner_.set_stream(stream);
  }
  std::uint32_t current_stream() const override { return inner_.current_stream(); }
  std::uint64_t record_event(std::uint32_t stream) override {
    flush_for_device();
    return inner_.record_event(stream);
  }
  void wait_event(std::uint32_t stream, std::uint64_t event) override {
    flush_for_device();
    inner_.wait_event(stream, event);
  }
  void synchronize_event(std::uint64_t event) override {
    flush_for_device();
    inner_.synchronize_event(event);
  }
  void synchronize_stream(std::uint32_t stream) override {
    flush_for_device();
    inner_.synchronize_stream(stream);
  }
  void launch(const runtime::OpDesc& op, std::string_view name) override {
    if (flushing_) {
      inner_.launch(op, name);
      return;
    }
    pending_.push_back(op);
    pending_names_.emplace_back(name);
  }
  OpMemory op_memory(const runtime::OpDesc& op) override { return inner_.op_memory(op); }
  // Compiled code has no per-op framework dispatch: its launches cost their wrapper's call.
  void host_op(std::string_view name) override {
    if (flushing_) inner_.host_op(name);
  }
  void host_work(double seconds, std::string_view name) override { inner_.host_work(seconds, name); }
  bool set_host_work_elsewhere(bool elsewhere) override { return inner_.set_host_work_elsewhere(elsewhere); }
  void collective(const runtime::OpDesc& op, runtime::GroupId group, std::string_view name) override {
    flush_for_device();
    inner_.collective(op, group, name);
  }
  void send(int peer, std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.send(peer, bytes, name);
  }
  void recv(int peer, std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.recv(peer, bytes, name);
  }
  void stage_host_copy(std::uint64_t bytes, std::string_view name) override { inner_.stage_host_copy(bytes, name); }
  void copy_host_to_device(std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.copy_host_to_device(bytes, name);
  }
  void copy_device_to_host(std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.copy_device_to_host(bytes, name);
  }
  void copy_to_peer(int peer, std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.copy_to_peer(peer, bytes, name);
  }
  void copy_from_peer(int peer, std::uint64_t bytes, std::string_view name) override {
    flush_for_device();
    inner_.copy_from_peer(peer, bytes, name);
  }
  void synchronize(std::string_view reason) override {
    flush_for_device();
    inner_.synchronize(reason);
  }
  double host_time_s() override {
    flush_for_device();
    return inner_.host_time_s();
  }
  void sleep_until_s(double time_s) override {
    flush_for_device();
    inner_.sleep_until_s(time_s);
  }
  double event_time_s(std::uint64_t event) override {
    flush_for_device();
    return inner_.event_time_s(event);
  }
  bool stream_idle(std::uint32_t stream) override {
    flush_for_device();
    return inner_.stream_idle(stream);
  }
  void graph_begin() override {
    flush_for_device();
    inner_.graph_begin();
  }
  std::uint64_t graph_end() override {
    flush_for_device();
    return inner_.graph_end();
  }
  void graph_launch(std::uint64_t graph) override {
    flush_for_device();
    inner_.graph_launch(graph);
  }
  // A compiled graph has no module structure: its scopes are not shown.
  void scope_begin(std::string_view) override {}
  void scope_end() override {}
  std::uint64_t trace_window_begin(const std::string& path) override {
    flush_for_device();
    return inner_.trace_window_begin(path);
  }
  std::string trace_window_end(std::uint64_t window) override {
    flush_for_device();
    return inner_.trace_window_end(window);
  }
  runtime::GroupId new_group(const std::vector<int>& ranks) override { return inner_.new_group(ranks); }

  void set_compile_span(std::string name) { compile_span_ = std::move(name); }

 private:
  // A new op holding the launches made since the last one.
  RecordedOp claim(std::string name) {
    RecordedOp r;
    r.name = std::move(name);
    r.kernels = std::move(pending_);
    r.kernel_names = std::move(pending_names_);
    pending_.clear();
    pending_names_.clear();
    return r;
  }
  // The buffer `t` lives in (device memory only), numbered on first sight.
  void add_use(std::vector<BufferUse>& uses, const Tensor& t) {
    if (!t.defined()) return;
    const detail::TensorImpl& v = detail::impl_of(t);
    const detail::TensorImpl& owner = v.base ? *v.base : v;
    if (owner.context == nullptr || owner.context != inner_.memory_owner()) return;  // host or meta memory
    std::uint32_t buffer = 0;
    if (auto it = buffer_of_.find(owner.handle); it != buffer_of_.end()) {
      buffer = it->second;
    } else {
      buffer = static_cast<std::uint32_t>(buffers_.size());
      buffer_of_[owner.handle] = buffer;
      buffers_.push_back(BufferState{});  // there before the region
    }
    // The elements it really holds: a broadcast dim (stride 0) holds one.
    std::uint64_t elements = 1;
    for (std::size_t d = 0; d < v.sizes.size(); ++d) {
      if (v.strides[d] != 0) elements *= static_cast<std::uint64_t>(std::max<std::int64_t>(v.sizes[d], 0));
    }
    if (v.numel == 0) elements = 0;
    BufferUse u{buffer, v.offset, (elements * element_bits(v.dtype) + 7) / 8, static_cast<std::uint64_t>(v.numel)};
    if (std::find(uses.begin(), uses.end(), u) == uses.end()) uses.push_back(u);
  }

  runtime::RankContext& inner_;
  RegionOptions options_;
  OpRecorder* previous_;
  bool backward_;
  bool flushing_ = false;
  bool new_graph_ = true;  // the next launching flush starts a graph (the region's first, or after a break)
  std::string compile_span_;
  std::vector<runtime::OpDesc> pending_;
  std::vector<std::string> pending_names_;
  std::vector<RecordedOp> ops_;
  std::vector<BufferState> buffers_;
  std::unordered_map<std::uint32_t, std::uint32_t> buffer_of_;  // live handle -> buffer
  std::uint32_t kernel_index_ = 0;
  RegionStats stats_;
};

// The regions of one thread's program.
struct ThreadState {
  std::unique_ptr<Region> region;
  std::unique_ptr<runtime::RankGuard> guard;
  std::unique_ptr<Region> suspended;  // a forward region taken off the rank (suspend_region)
  std::uint64_t suspended_graph = 0;  // its graph (nodes recorded meanwhile are eager ones)
  bool suspended_without_rank = false;
  bool active_without_rank = false;  // a region outside a simulation: nothing to record
  std::uint64_t forward_graph = 0;   // the graph of the active forward region (also without a rank)
  // Each graph's name and options, for its backward; the (rank serial, graph) pairs whose backward
  // has been compiled.
  std::unordered_map<std::uint64_t, RegionOptions> graphs;
  std::set<std::pair<std::uint64_t, std::uint64_t>> backward_compiled;
};
// Per thread: each rank's program runs on a thread of its own, and compiles its own graphs.
thread_local ThreadState t_state;

void install(std::unique_ptr<Region> region) {
  set_op_recorder(region.get());
  t_state.guard = std::make_unique<runtime::RankGuard>(region.get());
  t_state.region = std::move(region);
}

// Takes the active region off the rank: the rank and the recorder as they were before it.
std::unique_ptr<Region> uninstall() {
  std::unique_ptr<Region> region = std::move(t_state.region);
  set_op_recorder(region->previous_recorder());
  t_state.guard.reset();
  return region;
}

void start(const RegionOptions& options, bool backward) {
  runtime::RankContext* inner = runtime::current_rank();
  if (!backward) t_state.forward_graph = options.graph_id;
  if (inner == nullptr) {
    t_state.active_without_rank = true;
    return;
  }
  auto region = std::make_unique<Region>(*inner, options, op_recorder(), backward);
  region->set_compile_span(fmt::format("torch.compile: {}{}", backward ? "backward of " : "", options.graph_name));
  install(std::move(region));
}

RegionStats stop() {
  t_state.active_without_rank = false;
  t_state.forward_graph = 0;
  if (!t_state.region) return {};
  // The plan launches on the rank itself.
  return uninstall()->finish();
}

bool forward_active() { return t_state.region != nullptr && !t_state.region->backward(); }

}  // namespace

bool in_region() { return forward_active() || t_state.active_without_rank; }

std::uint64_t current_graph() { return forward_active() ? t_state.region->graph() : t_state.forward_graph; }

std::uint64_t rank_serial() {
  runtime::RankContext* c = runtime::current_rank();
  return c != nullptr ? c->memory_owner()->serial() : 0;
}

void begin_region(const RegionOptions& options) {
  if (in_region() || t_state.suspended || t_state.suspended_without_rank) {
    throw std::logic_error("torch.compile: a compiled region is already active on this thread");
  }
  if (options.graph_id == 0) throw std::invalid_argument("torch.compile: a region's graph id must not be 0");
  if (t_state.region) stop();  // a backward region (a hook compiling inside backward) ends first
  t_state.graphs[options.graph_id] = options;
  start(options, false);
}

void graph_break(const std::string& reason) {
  if (forward_active()) t_state.region->graph_break(reason);
}

void suspend_region(const std::string& reason) {
  if (t_state.suspended) throw std::logic_error("torch.compile: a compiled region is already suspended");
  if (t_state.active_without_rank) {  // nothing recorded: only the state goes
    t_state.active_without_rank = false;
    t_state.suspended_without_rank = true;
    t_state.suspended_graph = std::exchange(t_state.forward_graph, 0);
    return;
  }
  if (!forward_active()) return;
  t_state.region->graph_break(reason);
  t_state.suspended = uninstall();
  t_state.suspended_graph = std::exchange(t_state.forward_graph, 0);
}

void resume_region() {
  if (t_state.suspended_without_rank) {
    t_state.suspended_without_rank = false;
    t_state.active_without_rank = true;
    t_state.forward_graph = std::exchange(t_state.suspended_graph, 0);
    return;
  }
  if (!t_state.suspended) return;
  if (t_state.region) stop();  // a backward region the eager code ran ends first
  install(std::move(t_state.suspended));
  t_state.forward_graph = std::exchange(t_state.suspended_graph, 0);
}

RegionStats end_region() {
  if (!in_region()) throw std::logic_error("torch.compile: no compiled region is active on this thread");
  return stop();
}

void backward_enter(std::uint64_t graph) {
  Region* r = t_state.region.get();
  if (r && !r->backward()) return;  // a backward inside a forward region: its launches stay as they are
  if (t_state.active_without_rank) return;
  if (r && r->graph() == graph) {
    r->seal_pending();
    return;
  }
  if (r) stop();
  if (graph == 0 || runtime::current_rank() == nullptr) return;
  RegionOptions o;
  if (auto known = t_state.graphs.find(graph); known != t_state.graphs.end()) o = known->second;
  o.graph_id = graph;
  if (o.graph_name.empty()) o.graph_name = fmt::format("graph {}", graph);
  o.compiling = t_state.backward_compiled.insert({rank_serial(), graph}).second;
  o.cuda_graph = RegionOptions::CudaGraph::none;
  start(o, true);
}

void backward_node(std::string_view name, std::span<const Tensor> reads, std::span<const Tensor> writes,
                   bool fusible) {
  if (t_state.region && t_state.region->backward()) t_state.region->record_node(name, reads, writes, fusible);
}

void backward_leave() {
  if (t_state.region && t_state.region->backward()) stop();
}

bool in_backward_region() { return t_state.region && t_state.region->backward(); }

}  // namespace syntorch::torch::compile
