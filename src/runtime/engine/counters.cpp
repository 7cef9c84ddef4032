#include "counters.hpp"

#include <fmt/format.h>

namespace syntorch::runtime::detail {

void HardwareCounters::watch_device(int rank, std::uint32_t device) {
  core_.hw->compute_units(device).set_observer<&HardwareCounters::on_units>(this, static_cast<std::uint64_t>(rank));
  watched_.push_back({core_.hw->hbm(device), rank, {}, 0});
}

void HardwareCounters::watch_links() {
  const auto& links = core_.machine.links();
  const auto& endpoints = core_.machine.endpoints();
  for (std::uint32_t l = 0; l < links.size(); ++l) {
    for (bool forward : {true, false}) {
      const std::string& from = endpoints[forward ? links[l].a : links[l].b].name;
      const std::string& to = endpoints[forward ? links[l].b : links[l].a].name;
      const sim::ResourceId resource = core_.hw->link_direction(hw::Hop{l, forward});
      watched_.push_back({resource, -1, core_.tracer->declare_link(fmt::format("{} {} -> {}", links[l].name, from, to)), 0});
    }
  }
  core_.hw->network().set_observer<&HardwareCounters::on_rates>(this);
}

void HardwareCounters::on_units(std::uint64_t rank, std::uint32_t in_use) {
  core_.tracer->units_in_use(static_cast<int>(rank), core_.sim.now(), in_use);
}

void HardwareCounters::on_rates() {
  const sim::FlowNetwork& net = core_.hw->network();
  const sim::TimePs now = core_.sim.now();
  for (auto& w : watched_) {
    const double rate = net.used_rate(w.resource);
    if (rate == w.last) continue;
    w.last = rate;
    if (w.rank >= 0) core_.tracer->hbm_rate(w.rank, now, rate);
    else core_.tracer->link_rate(w.track, now, rate);
  }
}

}  // namespace syntorch::runtime::detail
