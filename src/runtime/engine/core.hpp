#pragma once
// What every part of one Engine run shares: the machine bound to the simulator, the executor
// that runs kernels on it, the dispatcher that lowers ops, the host's costs, the layout of each
// rank's streams, and the trace. The parts (ranks, the communicator, copies) hold a reference.

#include <cstdint>
#include <memory>

#include "syntorch/hw/sim_machine.hpp"
#include "syntorch/runtime/dispatcher.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/executor.hpp"
#include "syntorch/sim/simulator.hpp"
#include "kernel_cache.hpp"
#include "trace.hpp"

namespace syntorch::runtime::detail {

class Communicator;
class Copies;

// Host time per call, from the host nearest rank 0's device (all ranks of a run share one kind).
struct HostCosts {
  sim::TimePs dispatch_ps = 0;  // a framework op (eager only)
  sim::TimePs launch_ps = 0;    // a launch call
  sim::TimePs latency_ps = 0;   // from a launch call's end until the device may start the work
  sim::TimePs graph_ps = 0;     // one graph launch
  sim::TimePs sync_ps = 0;      // the host noticing the device is done
  sim::TimePs malloc_ps = 0;    // one cudaMalloc
  sim::TimePs free_ps = 0;      // one cudaFree (after the device sync it implies)
  double memcpy_bytes_per_ps = 0;  // pageable <-> pinned staging copies; 0 = free
};

// Each rank's streams: `compute` compute streams (0 is the default), then one for sends and one
// for receives.
struct StreamLayout {
  std::uint32_t compute = 1;
  std::uint32_t send = 1;
  std::uint32_t recv = 2;
  std::uint32_t total = 3;
};

struct EngineCore {
  EngineCore(const hw::Machine& m, KernelPolicy policy, int world, EngineOptions opts);
  ~EngineCore();

  // Whether rank `r` mirrors another (runs no program of its own).
  bool mirrored(int r) const {
    return !options.mirror_of.empty() && options.mirror_of[static_cast<std::size_t>(r)] != r;
  }
  // Whether rank `rep`'s program stands for rank `r`: r is rep, or mirrors it.
  bool stands_for(int rep, int r) const {
    return r == rep || (mirrored(r) && options.mirror_of[static_cast<std::size_t>(r)] == rep);
  }

  const hw::Machine& machine;
  Dispatcher dispatcher;
  int world_size;
  EngineOptions options;
  // On cache lines of its own: the simulator thread writes its clock and counters on every
  // event, while the programs' threads read the fields below on every call.
  alignas(64) sim::Simulator sim;
  alignas(64) std::unique_ptr<hw::SimMachine> hw;
  std::unique_ptr<Executor> executor;
  std::unique_ptr<EngineTrace> tracer;  // when tracing
  bool trace_memory = false;
  bool trace_device = false;  // device work on stream tracks (trace level kernel or hw)
  HostCosts costs;
  StreamLayout streams;
  std::unique_ptr<KernelCache> kernels;  // made once the trace is known (traced kernels carry their reasons)
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Copies> copies;
};

}  // namespace syntorch::runtime::detail
