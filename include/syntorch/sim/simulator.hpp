#pragma once
// A discrete-event simulator: a clock in integer picoseconds and a queue of pending events run in
// (time, insertion) order. It holds no global state: several simulators in one process are
// independent. Handlers are function pointers with an object pointer and a 64-bit argument; the
// member-function forms below (and sim::handler<&Class::method>() for other callbacks) generate
// those trampolines at compile time.

#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "syntorch/sim/event_queue.hpp"
#include "syntorch/sim/handler.hpp"
#include "syntorch/sim/time.hpp"

namespace syntorch::sim {

class Simulator {
 public:
  TimePs now() const { return now_; }

  // Schedules fn(obj, arg) at absolute time `when` (>= now(); earlier is a logic error).
  EventId at(TimePs when, EventFn fn, void* obj, std::uint64_t arg = 0) {
    if (when < now_) [[unlikely]] {
      throw std::logic_error("Simulator::at: event scheduled in the past");
    }
    return queue_.push(when, fn, obj, arg);
  }
  EventId after(TimePs delay_ps, EventFn fn, void* obj, std::uint64_t arg = 0) {
    return at(later(delay_ps), fn, obj, arg);
  }

  // Member-function forms: sim.at<&Flow::finish>(when, this) or with an argument
  // sim.at<&Pool::grant>(when, this, request_id).
  template <auto Method, class T>
  EventId at(TimePs when, T* obj, std::uint64_t arg = 0) {
    static_assert(std::is_base_of_v<MemberClassOf<Method>, T>);
    return at(when, handler<Method>(), static_cast<MemberClassOf<Method>*>(obj), arg);
  }
  template <auto Method, class T>
  EventId after(TimePs delay_ps, T* obj, std::uint64_t arg = 0) {
    return at<Method>(later(delay_ps), obj, arg);
  }

  // now() + delay_ps; std::overflow_error past the clock's end (rather than wrapping into the
  // past).
  TimePs later(TimePs delay_ps) const { return add_time(now_, delay_ps); }

  bool cancel(EventId id) { return queue_.cancel(id); }

  // Runs events until none is left, stop() is called, or the next one is later than `until`.
  // With a finite `until` the clock then stands at `until` (unless stopped early); with none, at
  // the last event run. Returns the number of events run by this call.
  std::uint64_t run(TimePs until = kTimeNever);

  // Runs exactly one event, if any. Returns false when the queue is empty.
  bool step();

  // Makes run() return after the current event.
  void stop() { stop_requested_ = true; }

  std::uint64_t events_executed() const { return events_executed_; }
  TimePs next_event_time() { return queue_.next_time(); }

 private:
  EventQueue queue_;
  TimePs now_ = 0;
  std::uint64_t events_executed_ = 0;
  bool stop_requested_ = false;
};

}  // namespace syntorch::sim
