#include "syntorch/hw/sim_machine.hpp"

#include "syntorch/sim/handler.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <cmath>

#include "syntorch/base/units.hpp"

namespace syntorch::hw {

SimMachine::SimMachine(sim::Simulator& sim, const Machine& machine)
    : sim_(sim), machine_(machine), network_(sim) {
  // Link directions first so that resource id = 2 * link + direction.
  for (const Link& l : machine.links()) {
    const double achievable = l.bandwidth_bytes_per_s * l.efficiency;
    network_.add_resource(l.name + " " + machine.endpoints()[l.a].name + "->" + machine.endpoints()[l.b].name,
                          achievable);
    network_.add_resource(l.name + " " + machine.endpoints()[l.b].name + "->" + machine.endpoints()[l.a].name,
                          achievable);
  }
  for (const Device& d : machine.devices()) {
    compute_units_.push_back(std::make_unique<sim::ServerPool>(sim, d.name + " compute", d.compute.units));
    hbm_.push_back(network_.add_resource(d.name + " hbm", d.memory.bandwidth_bytes_per_s * d.memory.efficiency));
    // What the library's channels can push on the wire, per protocol (none where unlimited).
    std::vector<std::optional<sim::ResourceId>> engines;
    if (d.collective) {
      for (const CollectiveProtocol& p : d.collective->protocols) {
        engines.push_back(p.channel_bandwidth_bytes_per_s > 0
                              ? std::optional(network_.add_resource(
                                    fmt::format("{} collective engine ({})", d.name, p.name),
                                    p.channels * p.channel_bandwidth_bytes_per_s))
                              : std::nullopt);
      }
    }
    comm_engine_.push_back(std::move(engines));
  }
  for (const Switch& s : machine.switches()) {
    if (s.spec.bandwidth_bytes_per_s > 0) {
      switch_resource_.push_back(network_.add_resource(s.name, s.spec.bandwidth_bytes_per_s));
    } else {
      switch_resource_.push_back(std::nullopt);
    }
  }
}

std::optional<sim::ResourceId> SimMachine::comm_engine(std::uint32_t device, std::uint32_t protocol) const {
  const auto& engines = comm_engine_[device];
  return protocol < engines.size() ? engines[protocol] : std::nullopt;
}

void SimMachine::route_resources(const Route& r, std::vector<sim::ResourceId>& out) const {
  for (const Hop& h : r.hops) out.push_back(link_direction(h));
  for (std::uint32_t s : r.switches) {
    if (switch_resource_[s]) out.push_back(*switch_resource_[s]);
  }
}

void SimMachine::transfer(std::uint32_t from_endpoint, std::uint32_t to_endpoint, double bytes, sim::EventFn on_done,
                          void* obj, std::uint64_t arg, const TransferOptions& options) {
  scratch_path_.clear();
  const Route& route = machine_.route(from_endpoint, to_endpoint);
  route_resources(route, scratch_path_);
  const Endpoint& source = machine_.endpoints()[from_endpoint];
  if (options.via_comm_engine && source.kind == EndpointKind::device) {
    if (const auto engine = comm_engine(source.index, options.protocol)) scratch_path_.push_back(*engine);
  }
  if (options.touch_hbm) {
    for (std::uint32_t e : {from_endpoint, to_endpoint}) {
      const Endpoint& ep = machine_.endpoints()[e];
      if (ep.kind != EndpointKind::device) continue;
      if (hbm_observer_) hbm_observer_(hbm_observer_obj_, ep.index);
      scratch_path_.push_back(hbm_[ep.index]);
    }
    if (from_endpoint == to_endpoint && !scratch_path_.empty()) scratch_path_.pop_back();  // one HBM, once
  }
  std::uint32_t slot;
  if (!free_transfers_.empty()) {
    slot = free_transfers_.back();
    free_transfers_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(transfers_.size());
    transfers_.emplace_back();
  }
  transfers_[slot] = Transfer{units::seconds_to_ps(route.latency_s), on_done,
                              obj, arg};
  if (scratch_path_.empty() && !std::isfinite(options.rate_cap_bytes_per_s)) {
    // Same endpoint and no memory traffic: only the latency (zero) remains.
    sim_.at<&SimMachine::arrived>(sim_.now(), this, slot);
    return;
  }
  network_.start(scratch_path_, bytes, sim::handler<&SimMachine::flow_done>(), this, slot, options.rate_cap_bytes_per_s);
}

void SimMachine::flow_done(std::uint32_t slot) { sim_.after<&SimMachine::arrived>(transfers_[slot].latency_ps, this, slot); }

void SimMachine::arrived(std::uint32_t slot) {
  const Transfer t = transfers_[slot];
  free_transfers_.push_back(slot);
  if (t.on_done) t.on_done(t.obj, t.arg);
}

}  // namespace syntorch::hw
