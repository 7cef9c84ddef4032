#include "syntorch/runtime/executor.hpp"

#include "syntorch/sim/handler.hpp"

#include <algorithm>
#include <cmath>

#include "syntorch/base/units.hpp"

namespace syntorch::runtime {

struct Executor::Running {
  const Kernel* kernel = nullptr;
  std::uint32_t device = 0;  // where it runs
  KernelRun* result = nullptr;
  sim::EventFn on_done = nullptr;
  void* obj = nullptr;
  std::uint64_t arg = 0;
  KernelPhases plan;
  int phase = 0;
  int pending = 0;          // parts of the current phase still running
  sim::TimePs phase_start_ps = 0;
  bool solo = false;
  sim::EventId solo_event{};
};

struct Executor::RunningCollective {
  const CollectivePlan* plan = nullptr;
  sim::EventFn on_done = nullptr;
  void* obj = nullptr;
  std::uint64_t arg = 0;
  std::vector<std::uint32_t> waiting;                 // unfinished dependencies per transfer
  std::vector<sim::TimePs> ready_ps;                  // earliest start the finished ones allow
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
  // Written bytes hold HBM longer than read ones (efficiency / write_efficiency of a read each):
  // the phases carry the time-equivalent bytes at the read rate.
  const hw::MemorySpec& mem = dev.memory;
  const double write_cost = mem.write_efficiency > 0 ? mem.efficiency / mem.write_efficiency : 1.0;
  const double bytes_scale =
      kernel.hbm_bytes > 0 ? 1.0 + kernel.hbm_write_bytes / kernel.hbm_bytes * (write_cost - 1.0) : 1.0;
  const double imbalance = std::max(1.0, kernel.imbalance);
  auto cap = [&](std::uint64_t u) { return unit_bw > 0 ? unit_bw * static_cast<double>(u) : sim::kUnlimitedRate; };
  plan.units = static_cast<std::uint32_t>(units);
  plan.waves = static_cast<double>(tiles) / static_cast<double>(slots);
  if (full > 0) {
    const std::uint64_t stacked = (slots + units - 1) / units;  // CTAs on the busiest unit in a full wave
    plan.phases[plan.count++] = {static_cast<double>(full * stacked) * kernel.tile_compute_s * imbalance,
                                 static_cast<double>(full * slots) * kernel.tile_hbm_bytes * bytes_scale, cap(units)};
  }
  if (rem > 0) {
    const std::uint64_t busiest = (rem + units - 1) / units;  // tiles on the busiest unit
    plan.phases[plan.count++] = {static_cast<double>(busiest) * kernel.tile_compute_s * imbalance,
                                 static_cast<double>(rem) * kernel.tile_hbm_bytes * bytes_scale, cap(std::min(rem, units))};
  }
  return plan;
}

namespace {
constexpr std::uint32_t kNoSlot = 0xffffffffu;

// A phase's arithmetic and memory times with nothing else on the device: what the closed form
// runs and what a conversion to sharing resumes from.
struct PhaseTimes {
  sim::TimePs compute_ps;
  sim::TimePs memory_ps;
  double rate_bytes_per_s;
};
PhaseTimes alone(const KernelPhases::Phase& p, double hbm_rate) {
  const double rate = std::min(p.cap_bytes_per_s, hbm_rate);
  return {units::seconds_to_ps(p.compute_s), p.bytes > 0 ? units::seconds_to_ps(p.bytes / rate) : 0, rate};
}
}  // namespace

Executor::Executor(hw::SimMachine& hw)
    : hw_(hw),
      running_on_device_(hw.machine().devices().size(), 0),
      solo_on_device_(hw.machine().devices().size(), kNoSlot) {
  hw_.set_hbm_observer(sim::handler<&Executor::share_device>(), this);
}

Executor::~Executor() { hw_.set_hbm_observer(nullptr, nullptr); }

void Executor::launch(const Kernel& kernel, std::uint32_t device, KernelRun& result, sim::EventFn on_done, void* obj,
                      std::uint64_t arg) {
  const hw::Device& dev = hw_.machine().devices()[device];
  const std::uint32_t slot = take_slot(running_, free_running_);
  Running& r = running_[slot];
  r = Running{};
  r.kernel = &kernel;
  r.device = device;
  r.result = &result;
  r.on_done = on_done;
  r.obj = obj;
  r.arg = arg;
  result = KernelRun{};

  r.plan = plan_phases(kernel, dev);
  result.units = r.plan.units;
  result.waves = r.plan.waves;
  const std::uint32_t d = device;
  share_device(d);  // a kernel already running solo there shares from now on
  ++running_on_device_[d];
  sim::ServerPool& pool = hw_.compute_units(d);
  const sim::ResourceId hbm = hw_.hbm(d);
  if (closed_form_ && running_on_device_[d] == 1 && hw_.network().flows_on(hbm) == 0 &&
      pool.try_acquire(r.plan.units)) {
    // Solo: the phases in closed form, as the flows would run them with nothing else around.
    sim::Simulator& sim = hw_.simulator();
    const double hbm_rate = hw_.network().capacity(hbm);
    result.start_ps = sim.now();
    result.overhead_ps = units::seconds_to_ps(dev.compute.kernel_overhead_s);
    sim::TimePs t = sim::add_time(result.start_ps, result.overhead_ps);
    for (int i = 0; i < r.plan.count; ++i) {
      const PhaseTimes p = alone(r.plan.phases[i], hbm_rate);
      result.compute_ps += p.compute_ps;
      result.memory_ps += p.memory_ps;
      t = sim::add_time(t, std::max(p.compute_ps, p.memory_ps));
    }
    r.solo = true;
    r.solo_event = sim.at<&Executor::solo_done>(t, this, slot);
    solo_on_device_[d] = slot;
    ++solo_kernels_;
    return;
  }
  pool.acquire(r.plan.units, sim::handler<&Executor::units_granted>(), this, slot);
}

void Executor::solo_done(std::uint32_t slot) {
  Running& r = running_[slot];
  solo_on_device_[r.device] = kNoSlot;
  r.solo = false;
  finish(slot);
}

void Executor::share_device(std::uint32_t device) {
  const std::uint32_t slot = solo_on_device_[device];
  if (slot == kNoSlot) return;
  solo_on_device_[device] = kNoSlot;
  Running& r = running_[slot];
  r.solo = false;
  ++converted_kernels_;
  sim::Simulator& sim = hw_.simulator();
  sim.cancel(r.solo_event);
  const sim::TimePs now = sim.now();
  const double hbm_rate = hw_.network().capacity(hw_.hbm(device));
  // Undo the closed-form totals; the phases account for themselves from here.
  r.result->compute_ps = 0;
  r.result->memory_ps = 0;
  sim::TimePs t = sim::add_time(r.result->start_ps, r.result->overhead_ps);
  if (now < t) {
    sim.at<&Executor::start_phase>(t, this, slot);
    return;
  }
  for (int i = 0; i < r.plan.count; ++i) {
    const KernelPhases::Phase& p = r.plan.phases[i];
    const PhaseTimes times = alone(p, hbm_rate);
    const double rate = times.rate_bytes_per_s;
    const sim::TimePs compute = times.compute_ps;
    const sim::TimePs memory = times.memory_ps;
    const sim::TimePs end = t + std::max(compute, memory);
    if (now < end || i + 1 == r.plan.count) {
      // In phase i: the arithmetic ends when it would have; the bytes not yet moved become a flow.
      r.phase = i;
      r.phase_start_ps = t;
      r.pending = 2;
      const sim::TimePs compute_end = t + compute;
      if (compute_end > now) {
        sim.at<&Executor::phase_compute_done>(compute_end, this, slot);
      } else {
        r.result->compute_ps += compute;
        --r.pending;
      }
      const double moved = rate * units::ps_to_seconds(now - t);
      const double left = p.bytes - moved;
      if (p.bytes > 0 && left > 1e-6 * p.bytes && t + memory > now) {
        const sim::ResourceId hbm = hw_.hbm(device);
        hw_.network().start(std::span(&hbm, 1), left, sim::handler<&Executor::phase_memory_done>(), this, slot,
                            p.cap_bytes_per_s);
      } else {
        r.result->memory_ps += memory;
        --r.pending;
      }
      if (r.pending == 0) {
        ++r.phase;
        sim.after<&Executor::start_phase>(0, this, slot);  // the next phase (or the end)
      }
      return;
    }
    r.result->compute_ps += compute;
    r.result->memory_ps += memory;
    t = end;
  }
}

void Executor::finish(std::uint32_t slot) {
  Running& r = running_[slot];
  const std::uint32_t d = r.device;
  hw_.compute_units(d).release(r.plan.units);
  --running_on_device_[d];
  r.result->end_ps = hw_.simulator().now();
  const sim::EventFn fn = r.on_done;
  void* o = r.obj;
  const std::uint64_t a = r.arg;
  free_running_.push_back(slot);
  if (fn) fn(o, a);
}

void Executor::units_granted(std::uint32_t slot) {
  Running& r = running_[slot];
  const hw::Device& dev = hw_.machine().devices()[r.device];
  r.result->start_ps = hw_.simulator().now();
  r.result->overhead_ps = units::seconds_to_ps(dev.compute.kernel_overhead_s);
  hw_.simulator().after<&Executor::start_phase>(r.result->overhead_ps, this, slot);
}

void Executor::start_phase(std::uint32_t slot) {
  Running& r = running_[slot];
  sim::Simulator& sim = hw_.simulator();
  if (r.phase == r.plan.count) {
    finish(slot);
    return;
  }
  const KernelPhases::Phase& p = r.plan.phases[r.phase];
  r.phase_start_ps = sim.now();
  r.pending = 2;
  sim.after<&Executor::phase_compute_done>(units::seconds_to_ps(p.compute_s), this, slot);
  if (p.bytes > 0) {
    const sim::ResourceId hbm = hw_.hbm(r.device);
    hw_.network().start(std::span(&hbm, 1), p.bytes, sim::handler<&Executor::phase_memory_done>(), this, slot,
                        p.cap_bytes_per_s);
  } else {
    sim.after<&Executor::phase_memory_done>(0, this, slot);
  }
}

void Executor::phase_compute_done(std::uint32_t slot) {
  Running& r = running_[slot];
  r.result->compute_ps += hw_.simulator().now() - r.phase_start_ps;
  phase_part_done(slot);
}

void Executor::phase_memory_done(std::uint32_t slot) {
  Running& r = running_[slot];
  r.result->memory_ps += hw_.simulator().now() - r.phase_start_ps;
  phase_part_done(slot);
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
  c.ready_ps.assign(n, 0);
  c.successors.assign(n, {});
  for (std::uint32_t i = 0; i < n; ++i) {
    const Transfer& t = plan.transfers[i];
    c.waiting[i] = static_cast<std::uint32_t>(t.deps.size()) + (t.follows != kNoTransfer ? 1 : 0);
    for (std::uint32_t d : t.deps) c.successors[d].push_back(i);
    if (t.follows != kNoTransfer) c.successors[t.follows].push_back(i);
  }
  const sim::TimePs latency = units::seconds_to_ps(plan.launch_latency_s + plan.step_latency_s);
  if (n == 0) {  // nothing crosses a link (an all-to-all whose ranks keep all they send)
    if (on_done) hw_.simulator().after(0, on_done, obj, arg);
    free_collectives_.push_back(slot);
    return;
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (c.waiting[i] == 0) hw_.simulator().after<&Executor::transfer_ready>(latency, this, pack(slot, i));
  }
}

void Executor::transfer_ready(std::uint64_t a) {
  const RunningCollective& c = collectives_[slot_of(a)];
  const Transfer& t = c.plan->transfers[index_of(a)];
  hw::TransferOptions options;
  options.touch_hbm = true;
  options.via_comm_engine = true;
  options.rate_cap_bytes_per_s = t.rate_cap_bytes_per_s;
  options.protocol = c.plan->protocol_index;
  hw_.transfer(t.src_endpoint, t.dst_endpoint, t.bytes, sim::handler<&Executor::transfer_done>(), this, a, options);
}

void Executor::transfer_done(std::uint64_t a) {
  const std::uint32_t slot = slot_of(a);
  RunningCollective& c = collectives_[slot];
  const sim::TimePs now = hw_.simulator().now();
  const sim::TimePs synced = now + units::seconds_to_ps(c.plan->step_latency_s);
  const std::uint32_t done = index_of(a);
  for (std::uint32_t s : c.successors[done]) {
    // A data dependency costs a synchronisation; the chunk ahead on the same path only its end.
    const bool ordered_only = c.plan->transfers[s].follows == done &&
                              std::find(c.plan->transfers[s].deps.begin(), c.plan->transfers[s].deps.end(), done) ==
                                  c.plan->transfers[s].deps.end();
    c.ready_ps[s] = std::max(c.ready_ps[s], ordered_only ? now : synced);
    if (--c.waiting[s] == 0) {
      hw_.simulator().after<&Executor::transfer_ready>(c.ready_ps[s] - now, this, pack(slot, s));
    }
  }
  if (++c.finished == c.plan->transfers.size()) {
    const sim::EventFn fn = c.on_done;
    void* o = c.obj;
    const std::uint64_t ar = c.arg;
    free_collectives_.push_back(slot);
    if (fn) fn(o, ar);
  }
}

}  // namespace syntorch::runtime
