// Benchmarks of the sim core.
//  - Hold model (Vaucher & Duval; the classic pending-event-set benchmark): N events pending;
//    each event, when it runs, schedules one more at now + a random increment, so the
//    population stays N. Measures events per second through Simulator::run.
//  - The same hold model on the bare EventQueue (pop + push), to show the simulator's overhead.
//  - FlowNetwork under churn: F flows in flight over R resources; each completion starts a new
//    flow on a random path of 1-3 resources, so every completion recomputes the max-min shares.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <queue>
#include <vector>

#include "syntorch/sim/flow_network.hpp"
#include "syntorch/sim/simulator.hpp"

namespace {

using namespace syntorch::sim;

struct XorShift {
  std::uint64_t s = 0x9E3779B97F4A7C15ULL;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

struct Holder {
  Simulator* sim;
  XorShift rng;
  void fire() { sim->after<&Holder::fire>(1 + rng.next() % 1'000'000, this); }
};

void BM_SimulatorHoldModel(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::uint64_t events_per_round = 1'000'000;
  Simulator sim;
  Holder h{&sim, {}};
  for (std::size_t i = 0; i < n; ++i) sim.after<&Holder::fire>(h.rng.next() % 1'000'000, &h);
  // Warm up so the heap shape is the steady state's.
  for (std::uint64_t i = 0; i < n; ++i) sim.step();
  std::uint64_t total = 0;
  for (auto _ : state) {
    for (std::uint64_t i = 0; i < events_per_round; ++i) sim.step();
    total += events_per_round;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
  state.counters["pending"] = static_cast<double>(n);
}
BENCHMARK(BM_SimulatorHoldModel)->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void BM_SimulatorHoldModelRun(benchmark::State& state) {
  // The same through run(until), the loop simulations use.
  const auto n = static_cast<std::size_t>(state.range(0));
  Simulator sim;
  Holder h{&sim, {}};
  for (std::size_t i = 0; i < n; ++i) sim.after<&Holder::fire>(h.rng.next() % 1'000'000, &h);
  sim.run(2'000'000);
  std::uint64_t total = 0;
  for (auto _ : state) {
    // With n pending and a mean increment of 500'000 ps, time advances 500'000 / n ps per
    // event: this slice of simulated time holds about two million events.
    total += sim.run(sim.now() + 1'000'000'000ULL / (n / 1000));
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
}
BENCHMARK(BM_SimulatorHoldModelRun)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_EventQueueHoldModel(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  EventQueue q;
  XorShift rng;
  auto nop = [](void*, std::uint64_t) {};
  for (std::size_t i = 0; i < n; ++i) q.push(rng.next() % 1'000'000, nop, nullptr, 0);
  EventQueue::Event e{};
  std::uint64_t total = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1'000'000; ++i) {
      q.pop(e);
      q.push(e.when + 1 + rng.next() % 1'000'000, nop, nullptr, 0);
    }
    total += 1'000'000;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
}
BENCHMARK(BM_EventQueueHoldModel)->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// Baseline for comparison in the same run: std::priority_queue (a binary heap) of the same
// 40-byte events with the same (time, sequence) order.
void BM_StdPriorityQueueHoldModel(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  struct Later {
    bool operator()(const EventQueue::Event& a, const EventQueue::Event& b) const {
      return a.when > b.when || (a.when == b.when && a.seq > b.seq);
    }
  };
  std::vector<EventQueue::Event> storage;
  storage.reserve(n + 1);
  std::priority_queue<EventQueue::Event, std::vector<EventQueue::Event>, Later> q(Later{}, std::move(storage));
  XorShift rng;
  std::uint64_t seq = 0;
  auto nop = [](void*, std::uint64_t) {};
  for (std::size_t i = 0; i < n; ++i) q.push({rng.next() % 1'000'000, ++seq, nop, nullptr, 0});
  std::uint64_t total = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1'000'000; ++i) {
      const TimePs when = q.top().when;
      q.pop();
      q.push({when + 1 + rng.next() % 1'000'000, ++seq, nop, nullptr, 0});
    }
    total += 1'000'000;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
}
BENCHMARK(BM_StdPriorityQueueHoldModel)->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

struct Churn {
  FlowNetwork* net;
  XorShift rng;
  std::uint32_t resources;
  std::uint64_t completions = 0;
  void start_one() {
    ResourceId path[3];
    const std::uint32_t len = 1 + static_cast<std::uint32_t>(rng.next() % 3);
    for (std::uint32_t i = 0; i < len; ++i) {
      ResourceId r;
      bool dup;
      do {
        r = static_cast<ResourceId>(rng.next() % resources);
        dup = false;
        for (std::uint32_t j = 0; j < i; ++j) dup = dup || path[j] == r;
      } while (dup);
      path[i] = r;
    }
    const double bytes = 1e5 + static_cast<double>(rng.next() % 10'000'000);
    net->start(std::span(path, len), bytes, &Churn::done, this);
  }
  static void done(void* self, std::uint64_t) {
    auto* c = static_cast<Churn*>(self);
    ++c->completions;
    c->start_one();
  }
};

void BM_FlowNetworkChurn(benchmark::State& state) {
  const auto flows = static_cast<std::uint32_t>(state.range(0));
  const auto resources = static_cast<std::uint32_t>(state.range(1));
  Simulator sim;
  FlowNetwork net(sim);
  for (std::uint32_t r = 0; r < resources; ++r) net.add_resource("r", 100e9 + 10e9 * r);
  Churn churn{&net, {}, resources};
  for (std::uint32_t f = 0; f < flows; ++f) churn.start_one();
  sim.run(1);
  for (auto _ : state) {
    const std::uint64_t before = churn.completions;
    while (churn.completions - before < 10'000) sim.step();
  }
  state.SetItemsProcessed(static_cast<int64_t>(churn.completions));
  state.counters["flows"] = flows;
  state.counters["resources"] = resources;
}
BENCHMARK(BM_FlowNetworkChurn)
    ->Args({8, 16})
    ->Args({64, 32})
    ->Args({256, 64})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
