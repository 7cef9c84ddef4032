#pragma once
// A Machine bound to a Simulator: the hardware resources that activity contends for. Each device
// has a pool of its compute units (SMs) and its HBM as a bandwidth resource; each link has one
// bandwidth resource per direction; a switch with a finite capacity is a resource too. Capacities
// are the achievable ones (peak x the config's efficiency). All
// bandwidth resources live in one FlowNetwork, so a transfer that crosses links and a kernel
// reading HBM share fairly with everything else in flight.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/sim/flow_network.hpp"
#include "syntorch/sim/server_pool.hpp"

namespace syntorch::hw {

// How a transfer uses the machine besides the routed links.
struct TransferOptions {
  bool touch_hbm = false;            // the HBM of a device at either end is on the path too
  bool via_comm_engine = false;      // the source device's collective library engine carries it
  double rate_cap_bytes_per_s = sim::kUnlimitedRate;  // never faster than this (e.g. its CTAs)
  std::uint32_t protocol = 0;        // the library's protocol whose channels' ceiling applies
};

class SimMachine {
 public:
  SimMachine(sim::Simulator& sim, const Machine& machine);
  SimMachine(const SimMachine&) = delete;
  SimMachine& operator=(const SimMachine&) = delete;

  const Machine& machine() const { return machine_; }
  sim::Simulator& simulator() { return sim_; }
  sim::FlowNetwork& network() { return network_; }

  sim::ServerPool& compute_units(std::uint32_t device) { return *compute_units_[device]; }
  sim::ResourceId hbm(std::uint32_t device) const { return hbm_[device]; }
  sim::ResourceId link_direction(Hop hop) const { return 2 * hop.link + (hop.forward ? 0 : 1); }

  // The resources a transfer along `route` crosses: each link direction on it and each switch
  // with a finite capacity (appended to `out`).
  void route_resources(const Route& route, std::vector<sim::ResourceId>& out) const;

  // Moves `bytes` between two endpoints over the routed links, sharing them with all other
  // traffic; on_done(obj, arg) runs when the last byte has arrived (the route's latency after
  // the flow ends).
  void transfer(std::uint32_t from_endpoint, std::uint32_t to_endpoint, double bytes, sim::EventFn on_done,
                void* obj, std::uint64_t arg = 0, const TransferOptions& options = {});

  // A device's collective engine: all its library's channels together (channels x channel
  // bandwidth), when its config gives a channel bandwidth.
  // What the device's library channels can push on the wire in `protocol`, as a resource.
  std::optional<sim::ResourceId> comm_engine(std::uint32_t device, std::uint32_t protocol = 0) const;

  // Told, before a transfer starts, of each device whose HBM it crosses (so a component that
  // models a device's work in closed form while nothing else touches it can stop doing so).
  // An EventFn called at once, with the device as its argument: sim::handler<&C::method>().
  using HbmObserver = sim::EventFn;
  void set_hbm_observer(HbmObserver fn, void* obj) {
    hbm_observer_ = fn;
    hbm_observer_obj_ = obj;
  }

 private:
  struct Transfer {
    sim::TimePs latency_ps;
    sim::EventFn on_done;
    void* obj;
    std::uint64_t arg;
  };
  // Events: a transfer's flow has drained; its last byte has arrived (after the route's latency).
  void flow_done(std::uint32_t slot);
  void arrived(std::uint32_t slot);

  sim::Simulator& sim_;
  const Machine& machine_;
  sim::FlowNetwork network_;
  std::vector<std::unique_ptr<sim::ServerPool>> compute_units_;
  std::vector<sim::ResourceId> hbm_;
  std::vector<std::optional<sim::ResourceId>> switch_resource_;
  std::vector<std::vector<std::optional<sim::ResourceId>>> comm_engine_;  // per device, per protocol
  std::vector<Transfer> transfers_;       // slots, reused
  std::vector<std::uint32_t> free_transfers_;
  std::vector<sim::ResourceId> scratch_path_;
  HbmObserver hbm_observer_ = nullptr;
  void* hbm_observer_obj_ = nullptr;
};

}  // namespace syntorch::hw
