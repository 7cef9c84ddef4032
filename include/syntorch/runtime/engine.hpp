#pragma once
// Runs one program per rank on a simulated machine, all ranks on one simulator. Each rank's
// program (model code against the torch API) runs on its own OS thread and issues, through its
// RankContext, allocations and host actions; it never waits for simulated time, because meta
// tensors carry no data. The simulator pulls those actions through bounded queues and plays
// them on the rank's host thread (host costs from the config), device streams (kernels through
// the Executor, collectives and sends through rendezvous with the other ranks) and the shared
// hardware. Results are a function of the programs and the machine only: the OS threads decide
// nothing about ordering, so two runs give identical numbers.
//
// Collectives run in fluid form: the first time a (group, op, size) occurs, its chunk-level plan
// is simulated alone on a scratch copy of the machine; that gives its duration and the bytes it
// puts on each link, HBM stack and library engine. Every occurrence then runs as one flow over
// those resources, capped so that alone it takes exactly that duration, and sharing max-min
// fairly with whatever else is in flight.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/os/caching_allocator.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/sim/time.hpp"

namespace syntorch::trace {
class Recorder;
}

namespace syntorch::runtime {

// A span of model structure a program marked (a generation step), on its rank's host clock.
struct ScopeTiming {
  std::string name;
  sim::TimePs begin_ps = 0;
  sim::TimePs end_ps = 0;
  // The rank's counters (RankResult's, from the start of the run) when the scope ended, so that a
  // front end can tell one step's share: exact once the program synchronised before ending it.
  sim::TimePs communication_ps = 0;
  sim::TimePs side_communication_ps = 0;
  std::array<double, kOpKinds> flops_by_op{};
};

// Where one rank's time and memory went.
struct RankResult {
  int rank = 0;
  int mirror_of = -1;  // the simulated rank whose results these are (EngineOptions::mirror_of), or -1
  std::uint32_t device = 0;
  std::string device_name;
  sim::TimePs host_finish_ps = 0;   // the host program's last action done
  sim::TimePs device_finish_ps = 0; // the device's last work done
  sim::TimePs host_busy_ps = 0;     // host time in dispatch and launch calls
  sim::TimePs host_blocked_ps = 0;  // host time waiting in synchronisations
  // Compute-stream time by what bounded it: kernels by arithmetic or memory; collectives moving
  // data; waiting for peers (a collective until its last member arrives, a receive not yet in).
  sim::TimePs compute_bound_ps = 0;
  sim::TimePs memory_bound_ps = 0;
  sim::TimePs communication_ps = 0;
  sim::TimePs waiting_ps = 0;
  // Sends and receives on their own streams (overlapping the compute stream), until they finish.
  sim::TimePs p2p_ps = 0;
  // Collectives moving data on streams other than the default one (a communication stream that
  // overlaps compute; communication_ps counts those on the default stream).
  sim::TimePs side_communication_ps = 0;
  double flops = 0;
  std::array<double, kOpKinds> flops_by_op{};  // by the op each kernel computes
  double hbm_bytes = 0;
  std::uint64_t kernels = 0;
  std::uint64_t collectives = 0;
  os::AllocatorStats memory;
  std::vector<ScopeTiming> steps;   // the top-level scopes, in order
};

// A simulated out-of-memory, with what held the memory.
struct OomReport {
  int rank = 0;
  std::string device_name;
  std::uint64_t requested_bytes = 0;
  std::string requested_for;
  os::AllocatorStats memory;                                   // at the failed request
  std::vector<std::pair<std::string, std::uint64_t>> largest;  // live bytes by tensor name, largest first
};

struct EngineResult {
  std::optional<OomReport> oom;
  std::vector<RankResult> ranks;
  sim::TimePs end_ps = 0;  // when the last rank's host and device were both done
  std::uint64_t events = 0;
  std::uint64_t solo_kernels = 0;       // kernels that ran in closed form
  std::uint64_t converted_kernels = 0;  // of those, converted to sharing part way
  std::uint64_t simulated_ranks = 0;    // ranks that ran a program (the others mirror one)
};

// What issues the kernels on the host. Eager: a Python framework (PyTorch eager) pays its
// dispatch cost on every op, views included, then one launch call per kernel. Native: a C++
// runtime (FasterTransformer, TensorRT-LLM) pays only the launch call per kernel; views are free.
enum class Framework : std::uint8_t { eager, native };

// How much a trace shows: torch ops and model scopes on the host; plus kernels, collectives,
// flows and memory; plus hardware counters (SMs, HBM and link bandwidth; every kernel then runs
// through the flow model, none in closed form).
enum class TraceLevel : std::uint8_t { op, kernel, hw };

struct EngineOptions {
  Framework framework = Framework::eager;
  std::size_t streams_per_rank = 1;
  trace::Recorder* recorder = nullptr;  // events when set and enabled
  // Trace into `recorder` even while no sink is attached: a program's profiler windows
  // (RankContext::trace_window_begin) attach theirs as it runs.
  bool profiling = false;
  TraceLevel trace_level = TraceLevel::kernel;
  // Identical replicas simulated once: mirror_of[r] is the rank whose program stands for rank r
  // (r itself: simulated). A mirrored rank runs no program; it joins every collective its
  // representative joins, at the same moment, so collectives still move every member's bytes
  // over the links, and its results are a copy of its representative's. Empty: every rank runs.
  std::vector<int> mirror_of;
  // The ranks whose tracks a trace shows (empty: every simulated rank).
  std::vector<int> trace_ranks;
};

class Engine {
 public:
  // Ranks 0..world_size-1 run on the machine's devices 0..world_size-1. Throws
  // std::invalid_argument for a mirror_of or trace_ranks that does not fit the world.
  Engine(const hw::Machine& machine, KernelPolicy policy, int world_size, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs `program` once per rank (each call on its own thread, with the rank's context current)
  // and simulates everything they issue. A simulated OOM is a result; any other exception a
  // program throws (a shape error, an input error) is rethrown here, the lowest rank's first.
  EngineResult run(const std::function<void(RankContext&)>& program);

  // Attached mode, for a front end whose program is the calling thread itself (a Python script
  // running `import syntorch.torch as torch`): attach() makes the one rank of a one-rank run
  // current on this thread and simulates what it issues on a thread of its own; detach(), on the
  // same thread, ends the program, waits for the simulation and gathers the result. An op the
  // program issues after the simulation stopped (it failed) throws os::QueueAborted; detach then
  // rethrows the simulation's error.
  void attach();
  EngineResult detach();

  const hw::Machine& machine() const { return machine_; }

 private:
  void prepare();         // the shared core, the ranks and their tracks
  EngineResult gather();  // after the simulation: scopes closed, results per rank
  struct Impl;
  const hw::Machine& machine_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace syntorch::runtime
