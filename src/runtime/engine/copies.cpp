// Host <-> device copies on a rank's stream.

#include "copies.hpp"

#include "rank.hpp"

namespace syntorch::runtime::detail {

void Copies::start(Rank& rank, bool to_device, std::uint64_t bytes, std::uint32_t stream) {
  const hw::Machine& machine = core_.machine;
  const std::uint32_t host_ep = machine.hosts()[*machine.host_of_device(rank.device())].endpoint;  // checked at launch
  const std::uint32_t dev_ep = machine.devices()[rank.device()].endpoint;
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(copies_.size());
    copies_.emplace_back();
  }
  const sim::TimePs now = core_.sim.now();
  copies_[slot] = {&rank, stream, now, bytes, to_device, rank.begin_item(stream, now)};
  hw::TransferOptions options;
  options.touch_hbm = true;
  core_.hw->transfer(to_device ? host_ep : dev_ep, to_device ? dev_ep : host_ep, static_cast<double>(bytes),
                     sim::handler<&Copies::on_done>(), this, slot, options);
}

void Copies::on_done(std::uint64_t slot) {
  const Copy c = copies_[slot];
  free_.push_back(static_cast<std::uint32_t>(slot));
  const sim::TimePs now = core_.sim.now();
  RankResult& result = c.rank->result();
  result.communication_ps += now - c.start_ps;
  result.device_finish_ps = now;
  if (c.rank->trace_device()) {
    const trace::Arg args[] = {{"bytes", c.bytes}, {"direction", c.to_device ? "host to device" : "device to host"}};
    c.rank->last_seq()[c.stream] =
        c.rank->tracer()->device_span(c.rank->index(), c.stream, c.to_device ? "memcpy HtoD" : "memcpy DtoH", "memcpy",
                                  c.start_ps, now, c.flow_id, args);
  }
  c.rank->end_item(c.stream, now);
  c.rank->stream(c.stream).finish_current();
}

void Rank::start_copy(const CommCall& call, os::Stream& stream) {
  core_.copies->start(*this, call.kind == CommCall::Kind::to_device, call.bytes, stream.index());
}

}  // namespace syntorch::runtime::detail
