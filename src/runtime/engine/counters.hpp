#pragma once
// Hardware counters for traces at level hw: SMs in use and HBM bandwidth per rank's device, and
// the bandwidth on each link direction, recorded whenever they change.

#include <cstdint>
#include <vector>

#include "core.hpp"

namespace syntorch::runtime::detail {

class HardwareCounters {
 public:
  explicit HardwareCounters(EngineCore& core) : core_(core) {}

  // Watches rank `rank`'s device `device` (its compute units and HBM).
  void watch_device(int rank, std::uint32_t device);
  // Watches every link direction of the machine (a counter track each).
  void watch_links();

 private:
  void on_units(std::uint64_t rank, std::uint32_t in_use);
  void on_rates();

  struct Watched {
    sim::ResourceId resource;
    int rank;  // an HBM (>= 0), or a link direction (-1) with its own track
    trace::TrackId track;
    double last = 0;
  };
  EngineCore& core_;
  std::vector<Watched> watched_;
};

}  // namespace syntorch::runtime::detail
