// The Engine: builds a run's shared core and its ranks, runs every rank's program on its own
// thread while the simulator plays what they issue, and gathers the results.

#include "syntorch/runtime/engine.hpp"

#include <fmt/format.h>

#include <thread>

#include "communicator.hpp"
#include "copies.hpp"
#include "core.hpp"
#include "counters.hpp"
#include "rank.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::runtime {

namespace detail {

EngineCore::EngineCore(const hw::Machine& m, KernelPolicy policy, int world, EngineOptions opts)
    : machine(m), dispatcher(m, std::move(policy)), world_size(world), options(std::move(opts)) {}
EngineCore::~EngineCore() = default;

}  // namespace detail

struct Engine::Impl {
  Impl(const hw::Machine& m, KernelPolicy policy, int world, EngineOptions opts)
      : core(m, std::move(policy), world, std::move(opts)), counters(core) {}
  detail::EngineCore core;
  detail::HardwareCounters counters;
  std::vector<std::unique_ptr<detail::Rank>> ranks;
  // Attached mode: the caller's thread is rank 0's program; the simulator runs on its own.
  std::unique_ptr<RankGuard> attached;
  std::thread simulation;
  std::exception_ptr simulation_error;
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
  const std::vector<int>& mirror = impl_->core.options.mirror_of;
  if (!mirror.empty()) {
    if (mirror.size() != static_cast<std::size_t>(world_size)) {
      throw std::invalid_argument(fmt::format("mirror_of has {} entries for {} ranks", mirror.size(), world_size));
    }
    for (int r = 0; r < world_size; ++r) {
      const int rep = mirror[static_cast<std::size_t>(r)];
      if (rep < 0 || rep >= world_size || mirror[static_cast<std::size_t>(rep)] != rep) {
        throw std::invalid_argument(fmt::format("rank {} mirrors rank {}, which is not a simulated rank", r, rep));
      }
    }
  }
  for (int r : impl_->core.options.trace_ranks) {
    if (r < 0 || r >= world_size) {
      throw std::invalid_argument(fmt::format("trace rank {} is outside 0..{}", r, world_size - 1));
    }
    if (!mirror.empty() && mirror[static_cast<std::size_t>(r)] != r) {
      throw std::invalid_argument(fmt::format("trace rank {} mirrors rank {} and runs nothing to trace", r,
                                              mirror[static_cast<std::size_t>(r)]));
    }
  }
}

Engine::~Engine() {
  // An attached program that never detached (its front end went away): stop the simulation.
  if (impl_ && impl_->simulation.joinable()) {
    impl_->ranks[0]->queue().close();
    impl_->simulation.join();
  }
}

EngineResult Engine::run(const std::function<void(RankContext&)>& program) {
  prepare();
  Impl& e = *impl_;
  detail::EngineCore& core = e.core;
  std::vector<std::thread> threads;
  threads.reserve(e.ranks.size());
  // The programs run on the cores the simulator's thread leaves (one at least).
  const unsigned cores = std::thread::hardware_concurrency();
  os::RunGate gate(cores > 1 ? cores - 1 : 1);
  for (auto& rank_ptr : e.ranks) {
    detail::Rank* rank = rank_ptr.get();
    rank->queue().set_gate(&gate);
    threads.emplace_back([rank, &program] {
      rank->queue().enter_gate();
      struct Leave {
        os::ActionQueue& queue;
        ~Leave() { queue.leave_gate(); }
      } leave{rank->queue()};
      RankGuard guard(rank);
      try {
        program(*rank);
      } catch (const os::QueueAborted&) {
      } catch (const OutOfMemory&) {
        // the rank holds the report
      } catch (...) {
        rank->error() = std::current_exception();
      }
      rank->queue().close();
    });
  }
  struct Joiner {
    Impl& e;
    std::vector<std::thread>& threads;
    ~Joiner() {
      for (auto& r : e.ranks) r->queue().abort();
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{e, threads};

  for (auto& rank : e.ranks) rank->host_thread().start();
  core.sim.run();
  // Everything the simulator could run has run. Programs still producing (their peers stopped:
  // an OOM, an error) would wait for room in their queues forever: unblock them.
  for (auto& r : e.ranks) r->queue().abort();
  for (auto& t : threads) t.join();
  for (auto& rank : e.ranks) {
    if (rank->error()) std::rethrow_exception(rank->error());
  }
  return gather();
}

void Engine::attach() {
  if (impl_->core.world_size != 1) throw std::logic_error("Engine::attach runs a one-rank program");
  prepare();
  Impl& e = *impl_;
  e.attached = std::make_unique<RankGuard>(e.ranks[0].get());
  e.ranks[0]->host_thread().start();
  e.simulation = std::thread([&e] {
    try {
      e.core.sim.run();
    } catch (...) {
      e.simulation_error = std::current_exception();
    }
    // Nothing more will be consumed: an op issued from now on must not wait for room.
    e.ranks[0]->queue().abort();
  });
}

EngineResult Engine::detach() {
  Impl& e = *impl_;
  if (!e.attached) throw std::logic_error("Engine::detach without attach");
  e.ranks[0]->queue().close();
  e.simulation.join();
  e.attached.reset();
  if (e.simulation_error) std::rethrow_exception(e.simulation_error);
  return gather();
}

void Engine::prepare() {
  Impl& e = *impl_;
  detail::EngineCore& core = e.core;
  if (!e.ranks.empty()) throw std::logic_error("an Engine runs once");
  if (core.options.recorder != nullptr && (core.options.recorder->enabled() || core.options.profiling)) {
    core.tracer = std::make_unique<detail::EngineTrace>(*core.options.recorder, core.options.trace_level);
    core.trace_memory = core.tracer->memory();
    core.trace_device = core.tracer->device_work();
  }
  const auto compute_streams = static_cast<std::uint32_t>(core.options.streams_per_rank);
  core.streams = {compute_streams, compute_streams, compute_streams + 1, compute_streams + 2};
  core.hw = std::make_unique<hw::SimMachine>(core.sim, machine_);
  core.executor = std::make_unique<Executor>(*core.hw);
  if (core.tracer && core.tracer->hardware()) core.executor->set_closed_form(false);
  core.kernels = std::make_unique<detail::KernelCache>(core.machine, core.dispatcher, core.tracer != nullptr);
  core.comm = std::make_unique<detail::Communicator>(core);
  core.copies = std::make_unique<detail::Copies>(core);

  // Host costs come from the host nearest rank 0's device (all ranks of a run share one kind).
  hw::HostSpec host_spec;
  if (auto h = machine_.host_of_device(0)) host_spec = machine_.hosts()[*h].spec;
  detail::HostCosts& costs = core.costs;
  costs.dispatch_ps = core.options.framework == Framework::eager ? units::seconds_to_ps(host_spec.op_dispatch_s) : 0;
  costs.launch_ps = units::seconds_to_ps(host_spec.kernel_launch_s);
  costs.latency_ps = units::seconds_to_ps(host_spec.launch_latency_s);
  costs.graph_ps = units::seconds_to_ps(host_spec.graph_launch_s);
  costs.sync_ps = units::seconds_to_ps(host_spec.sync_latency_s);
  costs.malloc_ps = units::seconds_to_ps(host_spec.device_malloc_s);
  costs.free_ps = units::seconds_to_ps(host_spec.device_free_s);
  costs.memcpy_bytes_per_ps = host_spec.memcpy_bandwidth_bytes_per_s * 1e-12;

  for (int r = 0; r < core.world_size; ++r) {
    if (core.mirrored(r)) continue;
    const auto d = static_cast<std::uint32_t>(r);
    const hw::Device& dev = machine_.devices()[d];
    auto rank = std::make_unique<detail::Rank>(core, r, d, static_cast<std::uint64_t>(dev.memory.size_bytes),
                                               dev.memory.start_address);
    rank->bind();
    if (rank->tracer() != nullptr) {
      core.tracer->declare_rank(r, dev.name, core.options.streams_per_rank);  // p2p streams: declared when used
      if (core.tracer->hardware()) e.counters.watch_device(r, d);
    }
    e.ranks.push_back(std::move(rank));
  }
  if (core.tracer && core.tracer->hardware()) e.counters.watch_links();
}

EngineResult Engine::gather() {
  Impl& e = *impl_;
  detail::EngineCore& core = e.core;
  if (core.trace_device) {
    for (auto& rank : e.ranks) rank->close_all_scopes();
  }
  if (core.tracer) core.tracer->finish();

  EngineResult result;
  for (auto& rank : e.ranks) {
    if (rank->oom() && !result.oom) result.oom = rank->oom();
  }
  std::vector<std::size_t> result_of(static_cast<std::size_t>(core.world_size));  // a simulated rank's entry
  for (auto& rank : e.ranks) {
    result_of[static_cast<std::size_t>(rank->index())] = result.ranks.size();
    RankResult r = std::move(rank->result());
    r.host_finish_ps = rank->host_thread().finish_ps();
    r.host_busy_ps = rank->host_thread().busy_ps();
    r.host_blocked_ps = rank->host_thread().blocked_ps();
    r.memory = rank->allocator().stats();
    if (!result.oom && !rank->host_thread().finished()) {
      throw std::logic_error(fmt::format("rank {}'s program stalled: a collective or send/recv that its peers never "
                                         "joined",
                                         rank->index()));
    }
    result.end_ps = std::max(result.end_ps, r.host_finish_ps);
    result.ranks.push_back(std::move(r));
  }
  result.simulated_ranks = result.ranks.size();
  if (!core.options.mirror_of.empty()) {
    // Every rank in rank order; a mirrored one with its representative's results.
    std::vector<RankResult> all;
    all.reserve(static_cast<std::size_t>(core.world_size));
    for (int r = 0; r < core.world_size; ++r) {
      const int rep = core.options.mirror_of[static_cast<std::size_t>(r)];
      all.push_back(result.ranks[result_of[static_cast<std::size_t>(rep)]]);
      if (rep == r) continue;
      RankResult& m = all.back();
      m.rank = r;
      m.mirror_of = rep;
      m.device = static_cast<std::uint32_t>(r);
      m.device_name = machine_.devices()[m.device].name;
    }
    result.ranks = std::move(all);
  }
  result.end_ps = std::max(result.end_ps, core.sim.now());
  result.events = core.sim.events_executed();
  result.solo_kernels = core.executor->solo_kernels();
  result.converted_kernels = core.executor->converted_kernels();
  return result;
}

}  // namespace syntorch::runtime
