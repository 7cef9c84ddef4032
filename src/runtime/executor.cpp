#include "syntorch/runtime/executor.hpp"

#include <algorithm>
#include <cmath>

#include "syntorch/base/units.hpp"

namespace syntorch::runtime {

struct Executor::Running {
  const Kernel* kernel = nullptr;
  KernelRun* result = nullptr;
  sim::EventFn on_done = nullptr;
  void* obj = nullptr;
  std::uint64_t arg = 0;
  KernelPhases plan;
  int phase = 0;
  int pending = 0;          // parts of the current phase still running
  sim::TimePs phase_start_ps = 0;
  sim::TimePs memory_done_ps = 0;
};

struct Executor::RunningCollective {
  const CollectivePlan* plan = nullptr;
  sim::EventFn on_done = nullptr;
  void* obj = nullptr;
  std::uint64_t arg = 0;
  std::vector<std::uint32_t> waiting;                 // unfinished dependencies per transfer
  std::vector<std::vector<std::uint32_t>> successors;
  std::size_t finished = 0;
};

namespace {
std::uint64_t pack(std::uint32_t slot, std::uint32_t index) { return (std::uint64_t{slot} << 32) | index; }
std::uint32_t slot_of(std::uint64_t a) { return static_cast<std::uint32_t>(a >> 32); }
std::uint32_t index_of(std::uint64_t a) { return static_cast<std::uint32_t>(a & 0xffffffffu); }

template <class T>
std::uint32_t take_slot(std::vector<T>& items, std::vector<std::uint32_t>& free) {
  if (!free.empty()) {
    const std::uint32_t s = free.back();
    free.pop_back();
    return s;
  }
  items.emplace_back();
  return static_cast<std::uint32_t>(items.size() - 1);
}
}  // namespace

KernelPhases plan_phases(const Kernel& kernel, const hw::Device& dev) {
  KernelPhases plan;
  const std::uint64_t tiles = std::max<std::uint64_t>(kernel.tiles, 1);
  const std::uint64_t per_unit = std::max<std::uint32_t>(kernel.tiles_per_unit, 1);
  const std::uint64_t units = std::min<std::uint64_t>(dev.compute.units, tiles);
  const std::uint64_t slots = std::min<std::uint64_t>(tiles, units * per_unit);
  const std::uint64_t full = tiles / slots;
  const std::uint64_t rem = tiles % slots;
  const double unit_bw = dev.compute.unit_bandwidth_bytes_per_s;
  auto cap = [&](std::uint64_t u) { return unit_bw > 0 ? unit_bw * static_cast<double>(u) : sim::kUnlimitedRate; };
  plan.units = static_cast<std::uint32_t>(units);
  plan.waves = static_cast<double>(tiles) / static_cast<double>(slots);
  if (full > 0) {
    const std::uint64_t stacked = slots / units;  // CTAs sharing one unit in a full wave
    plan.phases[plan.count++] = {static_cast<double>(full * stacked) * kernel.tile_compute_s,
                                 static_cast<double>(full * slots) * kernel.tile_hbm_bytes, cap(units)};
  }
  if (rem > 0) {
    const std::uint64_t busiest = (rem + units - 1) / units;  // tiles on the busiest unit
    plan.phases[plan.count++] = {static_cast<double>(busiest) * kernel.tile_compute_s,
                                 static_cast<double>(rem) * kernel.tile_hbm_bytes, cap(std::min(rem, units))};
  }
  return plan;
}

Executor::Executor(hw::SimMachine& hw) : hw_(hw) {}
Executor::~Executor() = default;

void Executor::launch(const Kernel& kernel, KernelRun& result, sim::EventFn on_done, void* obj, std::uint64_t arg) {
  const hw::Device& dev = hw_.machine().devices()[kernel.device];
  const std::uint32_t slot = take_slot(running_, free_running_);
  Running& r = running_[slot];
  r = Running{};
  r.kernel = &kernel;
  r.result = &result;
  r.on_done = on_done;
  r.obj = obj;
  r.arg = arg;
  result = KernelRun{};

  r.plan = plan_phases(kernel, dev);
  result.units = r.plan.units;
  result.waves = r.plan.waves;
  hw_.compute_units(kernel.device).acquire(r.plan.units, &Executor::on_units, this, slot);
}

void Executor::on_units(void* obj, std::uint64_t slot) {
  auto* self = static_cast<Executor*>(obj);
  Running& r = self->running_[slot];
  const hw::Device& dev = self->hw_.machine().devices()[r.kernel->device];
  r.result->start_ps = self->hw_.simulator().now();
  r.result->overhead_ps = units::seconds_to_ps(dev.compute.kernel_overhead_s);
  self->hw_.simulator().after(r.result->overhead_ps, &Executor::on_overhead_done, self, slot);
}

void Executor::on_overhead_done(void* obj, std::uint64_t slot) {
  static_cast<Executor*>(obj)->start_phase(static_cast<std::uint32_t>(slot));
}

void Executor::start_phase(std::uint32_t slot) {
  Running& r = running_[slot];
  sim::Simulator& sim = hw_.simulator();
  if (r.phase == r.plan.count) {
    hw_.compute_units(r.kernel->device).release(r.plan.units);
    r.result->end_ps = sim.now();
    const sim::EventFn fn = r.on_done;
    void* o = r.obj;
    const std::uint64_t a = r.arg;
    free_running_.push_back(slot);
    if (fn) fn(o, a);
    return;
  }
  const KernelPhases::Phase& p = r.plan.phases[r.phase];
  r.phase_start_ps = sim.now();
  r.memory_done_ps = sim.now();
  r.pending = 2;
  sim.after(units::seconds_to_ps(p.compute_s), &Executor::on_phase_compute, this, slot);
  if (p.bytes > 0) {
    const sim::ResourceId hbm = hw_.hbm(r.kernel->device);
    hw_.network().start(std::span(&hbm, 1), p.bytes, &Executor::on_phase_memory, this, slot, p.cap_bytes_per_s);
  } else {
    sim.after(0, &Executor::on_phase_memory, this, slot);
  }
}

void Executor::on_phase_compute(void* obj, std::uint64_t slot) {
  auto* self = static_cast<Executor*>(obj);
  Running& r = self->running_[slot];
  r.result->compute_ps += self->hw_.simulator().now() - r.phase_start_ps;
  self->phase_part_done(static_cast<std::uint32_t>(slot));
}

void Executor::on_phase_memory(void* obj, std::uint64_t slot) {
  auto* self = static_cast<Executor*>(obj);
  Running& r = self->running_[slot];
  r.result->memory_ps += self->hw_.simulator().now() - r.phase_start_ps;
  self->phase_part_done(static_cast<std::uint32_t>(slot));
}

void Executor::phase_part_done(std::uint32_t slot) {
  Running& r = running_[slot];
  if (--r.pending > 0) return;
  ++r.phase;
  start_phase(slot);
}

void Executor::run_collective(const CollectivePlan& plan, sim::EventFn on_done, void* obj, std::uint64_t arg) {
  const std::uint32_t slot = take_slot(collectives_, free_collectives_);
  RunningCollective& c = collectives_[slot];
  c.plan = &plan;
  c.on_done = on_done;
  c.obj = obj;
  c.arg = arg;
  c.finished = 0;
  const std::size_t n = plan.transfers.size();
  c.waiting.assign(n, 0);
  c.successors.assign(n, {});
  for (std::uint32_t i = 0; i < n; ++i) {
    c.waiting[i] = static_cast<std::uint32_t>(plan.transfers[i].deps.size());
    for (std::uint32_t d : plan.transfers[i].deps) c.successors[d].push_back(i);
  }
  const sim::TimePs latency = units::seconds_to_ps(plan.step_latency_s);
  if (n == 0) {
    hw_.simulator().after(0, on_done, obj, arg);
    free_collectives_.push_back(slot);
    return;
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (c.waiting[i] == 0) hw_.simulator().after(latency, &Executor::on_transfer_ready, this, pack(slot, i));
  }
}

void Executor::on_transfer_ready(void* obj, std::uint64_t a) {
  auto* self = static_cast<Executor*>(obj);
  const RunningCollective& c = self->collectives_[slot_of(a)];
  const Transfer& t = c.plan->transfers[index_of(a)];
  hw::TransferOptions options;
  options.touch_hbm = true;
  options.via_comm_engine = true;
  options.rate_cap_bytes_per_s = t.rate_cap_bytes_per_s;
  self->hw_.transfer(t.src_endpoint, t.dst_endpoint, t.bytes, &Executor::on_transfer_done, self, a, options);
}

void Executor::on_transfer_done(void* obj, std::uint64_t a) {
  auto* self = static_cast<Executor*>(obj);
  const std::uint32_t slot = slot_of(a);
  RunningCollective& c = self->collectives_[slot];
  const sim::TimePs latency = units::seconds_to_ps(c.plan->step_latency_s);
  for (std::uint32_t s : c.successors[index_of(a)]) {
    if (--c.waiting[s] == 0) self->hw_.simulator().after(latency, &Executor::on_transfer_ready, self, pack(slot, s));
  }
  if (++c.finished == c.plan->transfers.size()) {
    const sim::EventFn fn = c.on_done;
    void* o = c.obj;
    const std::uint64_t ar = c.arg;
    self->free_collectives_.push_back(slot);
    if (fn) fn(o, ar);
  }
}

}  // namespace syntorch::runtime
