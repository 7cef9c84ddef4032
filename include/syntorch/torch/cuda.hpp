#pragma once
// torch::cuda: device synchronisation, streams and events, and CUDA Graph capture on the current
// rank's device.

#include <cstdint>
#include <utility>
#include <string_view>

#include "syntorch/runtime/policy.hpp"
#include "syntorch/runtime/rank_context.hpp"

namespace syntorch::torch::cuda {

class Event;

// A device stream, as c10::cuda::CUDAStream: ops launched while it is current run on it in order;
// work on different streams may overlap and then shares the device's SMs, HBM and links.
// Outside a simulation every stream is stream 0 and nothing is launched.
class Stream {
 public:
  // A new stream of the current rank's device (torch.cuda.Stream(), getStreamFromPool).
  Stream();
  static Stream default_stream();
  std::uint32_t id() const { return id_; }
  bool operator==(const Stream& other) const { return id_ == other.id_; }

  // Later work on this stream waits until `event` completes (cudaStreamWaitEvent).
  void wait_event(const Event& event) const;
  // Later work on this stream waits for the work enqueued on `other` so far.
  void wait_stream(const Stream& other) const;
  // An event recorded on this stream now.
  Event record_event() const;
  // Blocks the host until this stream's work is done (cudaStreamSynchronize).
  void synchronize() const;
  // Whether its work is done when the host gets here (cudaStreamQuery; true outside a
  // simulation). The program waits for the simulator to reach this point.
  bool query() const;

 private:
  explicit Stream(std::uint32_t id) : id_(id) {}
  friend Stream current_stream();
  friend Stream default_stream();
  std::uint32_t id_ = 0;
};

// The stream ops are launched on now (the default stream until set).
Stream current_stream();
Stream default_stream();
void set_current_stream(const Stream& stream);

// Makes `stream` current for its lifetime, then restores the previous one
// (c10::cuda::CUDAStreamGuard; torch.cuda.stream(s) in Python).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// A CUDA event (at::cuda::CUDAEvent): record() marks the point a stream has reached; it
// completes when the work enqueued there before it is done. Recording again moves the mark.
class Event {
 public:
  void record();                       // on the current stream
  void record(const Stream& stream);
  void wait(const Stream& stream) const;  // stream.wait_event(*this)
  void synchronize() const;               // blocks the host until it completes
  // Whether it has completed when the host gets here (cudaEventQuery; true when never recorded,
  // or outside a simulation). The program waits for the simulator to reach this point.
  bool query() const;
  // Milliseconds from this event's completion to `end`'s (cudaEventElapsedTime), when the host
  // gets here. Throws torch::Error when either was never recorded or has not completed yet.
  double elapsed_time(const Event& end) const;
  bool recorded() const { return id_ != 0; }
  std::uint64_t id() const { return id_; }

 private:
  std::uint64_t id_ = 0;  // the latest record (0: never recorded)
};

// Blocks the host until the device has finished all the work launched so far
// (RankContext::synchronize("cuda::synchronize")). Nothing outside a simulation.
void synchronize();

// syntorch extension: a kernel of a recorded trace (a Chakra execution trace's compute node, as
// `syntorch replay` issues them) on the current stream, running for its recorded duration with its
// recorded FLOPs and bytes. Nothing outside a simulation.
void replay_kernel(double duration_s, double flops, double bytes, std::string_view name);

// Policy as code while the program runs (the xpuruntime design's set_kernel_policy): ops launched
// from now on are lowered by `policy`. Throws runtime::InputError for a collective protocol the
// machine lacks. Nothing outside a simulation.
void set_kernel_policy(const runtime::KernelPolicy& policy);
// The same from its text, "op=impl[:precision],..." (InputError naming what is wrong).
void set_kernel_policy(std::string_view text);

// Whether a simulated device is there to run on (a rank's program is running on this thread).
bool is_available();

// The caching allocator of this rank's device, as torch.cuda reports it (0 outside a simulation):
// bytes in live tensors, the most there were, bytes reserved from the device, the most reserved;
// empty_cache() gives cached segments that hold no live tensor back to the device.
std::uint64_t memory_allocated();
std::uint64_t max_memory_allocated();
std::uint64_t memory_reserved();
std::uint64_t max_memory_reserved();
void empty_cache();
// (free, total) bytes of this rank's device, as torch.cuda.mem_get_info: total its capacity, free
// what the caching allocator has not reserved ((0, 0) outside a simulation).
std::pair<std::uint64_t, std::uint64_t> mem_get_info();
// All the allocator's statistics (torch.cuda.memory_stats), and the peaks restarted from what is
// in use now (reset_peak_memory_stats). Empty outside a simulation.
os::AllocatorStats memory_stats();
void reset_peak_memory_stats();
// The caching allocator on (the default) or off: off, each tensor is a cudaMalloc and a cudaFree
// of its own, with their host costs (the hardware config's host device_malloc and device_free).
void set_caching_allocator(bool enabled);
// torch.cuda.get_device_properties of this rank's device (empty outside a simulation).
runtime::RankContext::DeviceProperties get_device_properties();

// at::cuda::CUDAGraph: the ops launched between capture_begin and capture_end are recorded, not
// run (their memory is allocated then, and stays the graph's as long as the program holds the
// tensors); replay() runs them, as one graph launch's host cost with no per-kernel launch cost,
// as often as called. Capturing again replaces the graph.
// Invariant: capture_end follows capture_begin; a graph destroyed mid-capture ends its capture.
class CUDAGraph {
 public:
  CUDAGraph() = default;
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  void capture_begin();
  void capture_end();
  // Throws torch::Error before a capture has ended.
  void replay();
  bool capturing() const { return capturing_; }

 private:
  bool capturing_ = false;
  std::uint64_t graph_ = 0;  // the rank's id of the captured graph (0: none yet)
};

}  // namespace syntorch::torch::cuda
