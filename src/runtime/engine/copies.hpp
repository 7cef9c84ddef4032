#pragma once
// Copies between a device and its host (pinned memory, as cudaMemcpyAsync on a stream): a stream
// item that moves its bytes over the routed host link, through the device's HBM, sharing both
// with everything else in flight.

#include <cstdint>
#include <vector>

#include "core.hpp"

namespace syntorch::runtime::detail {

class Rank;

class Copies {
 public:
  explicit Copies(EngineCore& core) : core_(core) {}

  // `rank` starts a copy of `bytes` on `stream` now.
  void start(Rank& rank, bool to_device, std::uint64_t bytes, std::uint32_t stream);

 private:
  struct Copy {
    Rank* rank = nullptr;
    std::uint32_t stream = 0;
    sim::TimePs start_ps = 0;
    std::uint64_t bytes = 0;
    bool to_device = false;
    std::uint64_t flow_id = 0;
  };
  void on_done(std::uint64_t slot);

  EngineCore& core_;
  std::vector<Copy> copies_;  // slots, reused
  std::vector<std::uint32_t> free_;
};

}  // namespace syntorch::runtime::detail
