#pragma once
// What the torch layer sees of one rank while a program runs: its device's memory, the ops it
// launches, the collectives it joins and the host synchronisations it makes. The torch layer
// calls these from the rank's host program; the implementation (the simulation Engine, or a fake
// in tests) turns them into allocations and host actions. The host program says what happens, in
// order; the simulator says when. A program that must decide what to do next from how far the
// simulation has come (a serving scheduler, a dispatcher) asks the host clock, which makes it
// wait for the simulator to reach that point of its own: the answers are the same on every run.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/os/caching_allocator.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime {

// A simulated out-of-memory: the device's allocator could not serve a request even after
// emptying its cache. Thrown out of the rank's host program (as PyTorch raises
// torch.cuda.OutOfMemoryError); the Engine turns it into an "oom" result with a memory summary.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(int rank, std::uint64_t requested_bytes, std::string what);
  int rank() const { return rank_; }
  std::uint64_t requested_bytes() const { return requested_bytes_; }
  const std::string& what_for() const { return what_; }

 private:
  int rank_;
  std::uint64_t requested_bytes_;
  std::string what_;
};

// The latest host time a sleep may ask for, in seconds from the run's start: about 106 days, far
// past any run, and clear of overflow in picoseconds.
inline constexpr double kMaxSleepUntilS = 9.2e6;

// A set of ranks that run collectives together (a process group), by global rank.
struct GroupId {
  std::uint32_t value = 0;
};

class RankContext {
 public:
  RankContext();
  virtual ~RankContext() = default;

  // Unique in the process: a tensor made on one context and released after it is gone (a Python
  // tensor outliving its run) can tell a new context at the same address from its own.
  std::uint64_t serial() const { return serial_; }
  // The context whose memory this one's allocations are: itself, or the context a layer standing
  // in front of it (a compiled region, torch/compile.hpp) forwards to. Tensors remember the owner,
  // and free through whichever context is current when the owner is.
  virtual RankContext* memory_owner() { return this; }

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Device memory. allocate returns a handle for free(); throws OutOfMemory when the device's
  // allocator cannot serve it. `what` names the tensor or purpose (for the OOM summary, traces).
  virtual std::uint32_t allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) = 0;
  virtual void free(std::uint32_t handle) = 0;
  // Files a live allocation under another purpose (autograd keeping an op's output as a .grad).
  virtual void set_memory_use(std::uint32_t handle, os::MemoryUse use) { (void)handle, (void)use; }
  // The device allocator's statistics as the program stands (torch.cuda.memory_allocated and
  // friends), and torch.cuda.empty_cache(): cached segments holding no live block go back.
  virtual os::AllocatorStats memory_stats() const = 0;
  virtual void empty_cache() = 0;
  // torch.cuda.reset_peak_memory_stats: the peaks restart from what is in use now.
  virtual void reset_peak_memory_stats() {}
  // The caching allocator on (the default) or off: off, every tensor is its own cudaMalloc and
  // cudaFree, each with its host cost (the allocator ablation; PYTORCH_NO_CUDA_MEMORY_CACHING).
  virtual void set_caching_allocator(bool enabled) { (void)enabled; }
  // What torch.cuda.get_device_properties reports of this rank's device.
  struct DeviceProperties {
    std::string name;                 // the machine's name
    std::uint64_t total_memory_bytes = 0;
    std::uint32_t multi_processor_count = 0;
    std::uint64_t l2_cache_bytes = 0;
    double clock_hz = 0;
    bool bf16 = false;                // its matrix units take bfloat16
  };
  virtual DeviceProperties device_properties() const { return {}; }

  // Policy as code while the program runs: ops launched from now on are lowered by `policy`
  // (those already launched keep their kernels; collectives keep the run's policy). Throws
  // InputError when the policy names a collective protocol the machine lacks; an implementation
  // the device cannot run is refused when an op needs it.
  virtual void set_policy(const KernelPolicy& policy) = 0;

  // Streams, as CUDA's: launches, collectives, sends, receives and copies go to the current
  // stream (0, the default stream, until set_stream). Work on different streams may overlap and
  // then shares the device's SMs and HBM and the links.
  // new_stream: a new stream of this rank's device (as torch.cuda.Stream()); its id.
  virtual std::uint32_t new_stream() = 0;
  virtual void set_stream(std::uint32_t stream) = 0;  // throws std::invalid_argument for an unknown stream
  virtual std::uint32_t current_stream() const = 0;
  // Events, as CUDA's: record_event marks the point reached on `stream`; the returned id (from 1)
  // completes when the work enqueued there before it is done. wait_event makes the work enqueued
  // on `stream` after it wait for `event` (0: no event, nothing to wait for).
  virtual std::uint64_t record_event(std::uint32_t stream) = 0;
  virtual void wait_event(std::uint32_t stream, std::uint64_t event) = 0;
  // Host blocks until `event` completes (cudaEventSynchronize), or `stream` is idle.
  virtual void synchronize_event(std::uint64_t event) = 0;
  virtual void synchronize_stream(std::uint32_t stream) = 0;

  // Launches a non-collective op from the host: the framework's dispatch cost, then its kernels
  // on the current stream. `name` is the framework op ("aten::matmul").
  virtual void launch(const OpDesc& op, std::string_view name) = 0;
  // The device memory the kernels `op` would be lowered to need beyond its inputs and outputs
  // (Kernel::workspace_bytes, saved_bytes summed), for the framework to allocate around the launch
  // and keep for the backward. Nothing for most ops; throws as launch does for an op the device
  // refuses.
  struct OpMemory {
    std::uint64_t workspace_bytes = 0;
    std::uint64_t saved_bytes = 0;
  };
  virtual OpMemory op_memory(const OpDesc& op) = 0;

  // An op that runs on the host only (a view, a reshape): it costs dispatch time, no kernel.
  virtual void host_op(std::string_view name) = 0;
  // Host-only work of `seconds` (a compiler's run: torch.compile's first call), shown as a span
  // named `name` on the host's timeline.
  virtual void host_work(double seconds, std::string_view name) { (void)seconds, (void)name; }
  // While set, host-only work (host_op, stage_host_copy) costs this rank's host nothing: it runs
  // in another process, as a DataLoader's workers load and collate batches. Returns the previous
  // setting.
  virtual bool set_host_work_elsewhere(bool elsewhere) {
    (void)elsewhere;
    return false;
  }

  // Collectives among `group` (this rank must be a member). op.bytes is this rank's buffer.
  virtual void collective(const OpDesc& op, GroupId group, std::string_view name) = 0;
  // Point-to-point: this rank sends (receives) `bytes` to (from) global rank `peer`. Both sides
  // wait for each other on their streams, as NCCL send/recv do.
  virtual void send(int peer, std::uint64_t bytes, std::string_view name) = 0;
  virtual void recv(int peer, std::uint64_t bytes, std::string_view name) = 0;
  // A host <-> device copy over the host link (pinned memory, on the current stream).
  // stage_host_copy is the host's part of a copy from or to pageable memory: `bytes` copied
  // between it and a pinned staging buffer at the host's memcpy rate (host time only), as the
  // CUDA driver stages pageable transfers.
  virtual void stage_host_copy(std::uint64_t bytes, std::string_view name) { (void)bytes, (void)name; }
  virtual void copy_host_to_device(std::uint64_t bytes, std::string_view name) = 0;
  virtual void copy_device_to_host(std::uint64_t bytes, std::string_view name) = 0;
  // One-sided copies of `bytes` between this rank's device and global rank `peer`'s over the
  // links between them, on the current stream (cudaMemcpyPeerAsync, or the GPU-direct RDMA write
  // or read a KV transfer library issues); the peer takes no part. Where ranks mirror this one,
  // each copies as well, with the rank as far from `peer` as it is from this one (one replica's
  // tensor-parallel shards with another's).
  virtual void copy_to_peer(int peer, std::uint64_t bytes, std::string_view name) = 0;
  virtual void copy_from_peer(int peer, std::uint64_t bytes, std::string_view name) = 0;

  // Blocks the host until this rank's device has finished everything launched so far.
  virtual void synchronize(std::string_view reason) = 0;

  // The host's clock: simulated seconds from the run's start when the host reaches this call
  // (the program waits for the simulator to get there). Throws std::logic_error while capturing.
  virtual double host_time_s() = 0;
  // The host idles until its clock reads `time_s` (at once when it has passed). Throws
  // std::invalid_argument for a time that is not a finite number of seconds from 0, and
  // std::logic_error while capturing.
  virtual void sleep_until_s(double time_s) = 0;
  // When `event` completed, on the host's clock, if it had when the host reaches this call; NaN
  // if not yet (cudaEventQuery, and the readings cudaEventElapsedTime subtracts). An event never
  // recorded (0) has, at 0. Waits for the simulator as host_time_s does.
  virtual double event_time_s(std::uint64_t event) = 0;
  // Whether `stream` has finished all its work when the host reaches this call (cudaStreamQuery).
  virtual bool stream_idle(std::uint32_t stream) = 0;

  // Graph capture (CUDA graphs): what is launched between begin and end is recorded, not run;
  // graph_end returns the graph's id (from 1). graph_launch(id) issues it: one graph launch's
  // host cost, then its kernels with no launch cost of their own; a graph may be launched any
  // number of times.
  virtual void graph_begin() = 0;
  virtual std::uint64_t graph_end() = 0;
  virtual void graph_launch(std::uint64_t graph) = 0;

  // Model structure marks (a layer, a generation step): spans on the host timeline in traces.
  virtual void scope_begin(std::string_view name) = 0;
  virtual void scope_end() = 0;

  // A profiler's window (torch.profiler.profile): from trace_window_begin the rank's own trace
  // events (its host ops, device work and memory) also go to a Chrome JSON trace at `path`;
  // trace_window_end waits for the device (as stopping a profiler does), then for the simulator
  // to reach that point, closes the file and returns the window's summary table (ops and kernels
  // by name with count and time). Throws std::logic_error where the run keeps no trace or while
  // capturing a graph, std::runtime_error when the file cannot be written.
  virtual std::uint64_t trace_window_begin(const std::string& path) {
    (void)path;
    throw std::logic_error("this run cannot profile: it keeps no trace");
  }
  virtual std::string trace_window_end(std::uint64_t window) {
    (void)window;
    throw std::logic_error("this run cannot profile: it keeps no trace");
  }

  // Registers a process group over global ranks (the same call on every member, in the same
  // order, gives the same id).
  virtual GroupId new_group(const std::vector<int>& ranks) = 0;

 private:
  std::uint64_t serial_;
};

// The context of the rank whose host program runs on this thread; nullptr outside a simulation
// (tensors are then plain meta tensors: shapes only, no memory, no kernels).
RankContext* current_rank();

// Makes `context` current on this thread for its lifetime, restoring the previous one after.
class RankGuard {
 public:
  explicit RankGuard(RankContext* context);
  ~RankGuard();
  RankGuard(const RankGuard&) = delete;
  RankGuard& operator=(const RankGuard&) = delete;

 private:
  RankContext* previous_;
};

// The purpose newly allocated tensors are counted under on this thread (activations unless a
// guard says otherwise): modules use it for their parameters, models for their KV cache.
os::MemoryUse current_memory_use();
class MemoryUseGuard {
 public:
  explicit MemoryUseGuard(os::MemoryUse use);
  ~MemoryUseGuard();
  MemoryUseGuard(const MemoryUseGuard&) = delete;
  MemoryUseGuard& operator=(const MemoryUseGuard&) = delete;

 private:
  os::MemoryUse previous_;
};

}  // namespace syntorch::runtime
