#include "syntorch/sim/simulator.hpp"

namespace syntorch::sim {

std::uint64_t Simulator::run(TimePs until) {
  stop_requested_ = false;
  std::uint64_t ran = 0;
  EventQueue::Event e;
  while (!stop_requested_) {
    const TimePs next = queue_.next_time();
    if (next == kTimeNever) break;
    if (next > until) {
      now_ = until;
      break;
    }
    queue_.pop(e);
    now_ = e.when;
    e.fn(e.obj, e.arg);
    ++ran;
  }
  events_executed_ += ran;
  return ran;
}

bool Simulator::step() {
  EventQueue::Event e;
  if (!queue_.pop(e)) return false;
  now_ = e.when;
  e.fn(e.obj, e.arg);
  ++events_executed_;
  return true;
}

}  // namespace syntorch::sim
