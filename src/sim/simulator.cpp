#include "syntorch/sim/simulator.hpp"

namespace syntorch::sim {

std::uint64_t Simulator::run(TimePs until) {
  stop_requested_ = false;
  std::uint64_t ran = 0;
  EventQueue::Event e;
  while (!stop_requested_ && queue_.pop_until(until, e)) {
    now_ = e.when;
    e.fn(e.obj, e.arg);
    ++ran;
  }
  if (!stop_requested_ && until != kTimeNever && until > now_) now_ = until;
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
