#pragma once
// The pending-event set of a discrete-event simulator: events ordered by time, ties broken by
// insertion order (FIFO), with cancellation.
//
// Representation: a 4-ary min-heap of 40-byte PODs {when, seq, fn, obj, arg}; the handler is a
// plain function pointer plus an object pointer and a 64-bit argument, so scheduling allocates
// nothing beyond the heap's amortised growth. Cancellation is lazy: a cancelled event's sequence
// number goes into a small set and the event is dropped when it reaches the top; when more than
// half the heap is dead it is compacted.
//
// Cost per operation, n = pending events (ns-3's scheduler.h convention):
//   push      O(log4 n) worst case, O(1) on average for times later than most pending ones
//   pop       O(log4 n)
//   cancel    O(1) average (hash insert), plus the amortised O(1) compaction share
//   top time  O(1) (after dropping cancelled events at the top)

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "syntorch/sim/time.hpp"

namespace syntorch::sim {

using EventFn = void (*)(void* obj, std::uint64_t arg);

// Names one scheduled event. Default-constructed ids name nothing.
struct EventId {
  TimePs when = 0;
  std::uint64_t seq = 0;  // 0 = none; real events count from 1
  bool valid() const { return seq != 0; }
};

class EventQueue {
 public:
  struct Event {
    TimePs when;
    std::uint64_t seq;
    EventFn fn;
    void* obj;
    std::uint64_t arg;
  };

  EventId push(TimePs when, EventFn fn, void* obj, std::uint64_t arg);

  // Cancels a pending event. Returns true when it was pending; false when it already ran or never
  // existed, and for a second cancel of the same event (after a compaction the queue no longer
  // remembers cancelled ids, and a repeated cancel is then a harmless no-op that returns true).
  bool cancel(EventId id);

  // Removes the earliest live event into `out`; false when none is left.
  bool pop(Event& out);

  // The earliest live event's time, or kTimeNever when none.
  TimePs next_time();

  bool empty() { return next_time() == kTimeNever; }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  static bool earlier(const Event& a, const Event& b) {
    return a.when < b.when || (a.when == b.when && a.seq < b.seq);
  }
  void sift_up(std::size_t i, Event e);
  void sift_down(std::size_t i, Event e);
  void drop_cancelled_top();
  void remove_top();
  void compact();

  std::vector<Event> heap_;
  std::unordered_set<std::uint64_t> cancelled_;
  std::uint64_t next_seq_ = 1;
  TimePs last_when_ = 0;         // key of the last event popped: events at or before it
  std::uint64_t last_seq_ = 0;   // have already run
};

}  // namespace syntorch::sim
