// Host <-> device copies on a rank's stream.

#include "copies.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "rank.hpp"

namespace syntorch::runtime::detail {

std::uint32_t Copies::take_slot() {
  if (!free_.empty()) {
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  copies_.emplace_back();
  return static_cast<std::uint32_t>(copies_.size() - 1);
}

void Copies::start(Rank& rank, bool to_device, std::uint64_t bytes, std::uint32_t stream) {
  const hw::Machine& machine = core_.machine;
  const std::uint32_t host_ep = machine.hosts()[*machine.host_of_device(rank.device())].endpoint;  // checked at launch
  const std::uint32_t dev_ep = machine.devices()[rank.device()].endpoint;
  const std::uint32_t slot = take_slot();
  const sim::TimePs now = core_.sim.now();
  copies_[slot] = {&rank, stream, now, bytes, to_device, -1, false, 1, rank.begin_item(stream, now)};
  hw::TransferOptions options;
  options.touch_hbm = true;
  core_.hw->transfer(to_device ? host_ep : dev_ep, to_device ? dev_ep : host_ep, static_cast<double>(bytes),
                     sim::handler<&Copies::on_done>(), this, slot, options);
}

void Copies::start_peer(Rank& rank, bool to_peer, int peer, std::uint64_t bytes, std::uint32_t stream) {
  const hw::Machine& machine = core_.machine;
  const std::uint32_t slot = take_slot();
  const sim::TimePs now = core_.sim.now();
  copies_[slot] = {&rank, stream, now, bytes, false, peer, to_peer, 0, rank.begin_item(stream, now)};
  hw::TransferOptions options;
  options.touch_hbm = true;
  // Rank r runs on device r; the caller and the ranks mirroring it, each to its offset from peer
  // (checked when the program issued it).
  const int self = rank.index();
  std::vector<std::pair<int, int>> pairs;  // (this side, the peer's side)
  for (int r = 0; r < core_.world_size; ++r) {
    if (core_.stands_for(self, r)) {
      pairs.emplace_back(r, peer + (r - self));
    }
  }
  copies_[slot].transfers = static_cast<std::uint32_t>(pairs.size());
  for (const auto& [mine, theirs] : pairs) {
    const std::uint32_t a = machine.devices()[static_cast<std::size_t>(mine)].endpoint;
    const std::uint32_t b = machine.devices()[static_cast<std::size_t>(theirs)].endpoint;
    core_.hw->transfer(to_peer ? a : b, to_peer ? b : a, static_cast<double>(bytes), sim::handler<&Copies::on_done>(),
                       this, slot, options);
  }
}

void Copies::on_done(std::uint64_t slot) {
  if (--copies_[slot].transfers > 0) return;
  const Copy c = copies_[slot];
  free_.push_back(static_cast<std::uint32_t>(slot));
  const sim::TimePs now = core_.sim.now();
  RankResult& result = c.rank->result();
  result.communication_ps += now - c.start_ps;
  result.device_finish_ps = now;
  if (c.rank->trace_device()) {
    const bool peer = c.peer >= 0;
    const std::string to = peer ? fmt::format("{} rank {}", c.to_peer ? "to" : "from", c.peer) : std::string();
    const trace::Arg args[] = {
        {"bytes", c.bytes},
        {"direction", peer ? std::string_view(to) : c.to_device ? "host to device" : "device to host"}};
    c.rank->last_seq()[c.stream] = c.rank->tracer()->device_span(
        c.rank->index(), c.stream, peer ? "memcpy PtoP" : c.to_device ? "memcpy HtoD" : "memcpy DtoH", "memcpy",
        c.start_ps, now, c.flow_id, args);
  }
  c.rank->end_item(c.stream, now);
  c.rank->stream(c.stream).finish_current();
}

void Rank::start_copy(const CommCall& call, os::Stream& stream) {
  if (call.kind == CommCall::Kind::to_peer || call.kind == CommCall::Kind::from_peer) {
    core_.copies->start_peer(*this, call.kind == CommCall::Kind::to_peer, static_cast<int>(call.target), call.bytes,
                             stream.index());
    return;
  }
  core_.copies->start(*this, call.kind == CommCall::Kind::to_device, call.bytes, stream.index());
}

}  // namespace syntorch::runtime::detail
