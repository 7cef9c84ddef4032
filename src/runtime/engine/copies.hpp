#pragma once
// Copies between a device and its host (pinned memory, as cudaMemcpyAsync on a stream), or from a
// device to another's (a peer copy, with those of the ranks mirroring the caller): a stream item
// that moves its bytes over the routed links, through the devices' HBM, sharing them with
// everything else in flight; it ends when its last transfer does.

#include <cstdint>
#include <vector>

#include "core.hpp"

namespace syntorch::runtime::detail {

class Rank;

class Copies {
 public:
  explicit Copies(EngineCore& core) : core_(core) {}

  // `rank` starts a host copy of `bytes` on `stream` now.
  void start(Rank& rank, bool to_device, std::uint64_t bytes, std::uint32_t stream);
  // `rank` starts a peer copy of `bytes` to (from) rank `peer`'s device on `stream` now (and each
  // rank mirroring it one with the rank at its offset from `peer`).
  void start_peer(Rank& rank, bool to_peer, int peer, std::uint64_t bytes, std::uint32_t stream);

 private:
  struct Copy {
    Rank* rank = nullptr;
    std::uint32_t stream = 0;
    sim::TimePs start_ps = 0;
    std::uint64_t bytes = 0;
    bool to_device = false;
    int peer = -1;  // a peer copy's other rank
    bool to_peer = false;
    std::uint32_t transfers = 1;  // not finished yet
    std::uint64_t flow_id = 0;
  };
  std::uint32_t take_slot();
  void on_done(std::uint64_t slot);

  EngineCore& core_;
  std::vector<Copy> copies_;  // slots, reused
  std::vector<std::uint32_t> free_;
};

}  // namespace syntorch::runtime::detail
