#pragma once
// The pending-event set of a discrete-event simulator: events ordered by time, ties broken by
// insertion order (FIFO), with cancellation.
//
// Representation: a radix heap over 8-bit digits (a radix-256 variant of Ahuja, Mehlhorn,
// Orlin & Tarjan 1990; the shape of a hierarchical timing wheel). It fits simulated time because
// time is monotone: no event is ever scheduled before the last one popped (`last`). An event sits
// at level L = the highest 8-bit digit in which its time differs from `last`, in slot = that
// digit of its time; level 0 slot s holds events at exactly time (last with low digit s). Popping
// takes the lowest non-empty level-0 slot; when level 0 is empty, the lowest non-empty slot of
// the lowest non-empty level is redistributed around its minimum time into lower levels. An
// event's slot depends only on its time and `last`, and redistribution keeps order, so same-time
// events leave in insertion order. An event moves at most once per digit level it crosses (two
// or three moves for events microseconds ahead). Events are 40-byte PODs {when, seq, fn, obj,
// arg}: a function pointer with an object pointer and an argument, nothing allocated per event
// beyond the slots' amortised growth. Bitmaps find the next non-empty slot in a few instructions.
//
// Cancellation is lazy: a cancelled event's sequence number goes into a small set and the event
// is dropped when it comes up; when the dead outnumber the live, the slots are compacted.
// Peeking (next_time, a pop_until that finds nothing due) never moves the radix reference, so
// events may be pushed at any time from the last popped one on.
//
// Cost per operation, n = pending events, B = 64 bits of time (ns-3's scheduler.h convention):
//   push      O(1)
//   pop       O(1) amortised plus at most B/8 = 8 moves per event over its lifetime (in
//             practice 1-3: one per 8-bit digit in which its time differs from the clock)
//   cancel    O(1) average (hash insert), plus the amortised O(1) compaction share
//   next time O(1) amortised (may redistribute)
// Pushing an event earlier than the last popped one is a logic error (std::logic_error).
// A repeated cancel of the same event returns false, except after a compaction (which forgets).

#include <array>
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

  EventId push(TimePs when, EventFn fn, void* obj, std::uint64_t arg) {
    if (when < last_when_) [[unlikely]] {
      throw_push_in_past();
    }
    place(Event{when, next_seq_, fn, obj, arg});
    ++size_;
    return EventId{when, next_seq_++};
  }

  // Cancels a pending event. Returns true when it was pending; false when it already ran, never
  // existed, or was cancelled before.
  bool cancel(EventId id);

  // Removes the earliest live event into `out`; false when none is left.
  bool pop(Event& out) { return pop_until(kTimeNever, out); }
  // As pop, but only an event at or before `until`. Looking and not taking changes nothing:
  // events may still be pushed at any time from the last popped one on.
  bool pop_until(TimePs until, Event& out) {
    // Fast path: the head slot has a live event.
    if (head_slot_ == kSlots || head_ >= levels_[0].slots[head_slot_].size() || cancels_pending_ != 0) {
      if (!refill(until)) return false;
    }
    const Event& e = levels_[0].slots[head_slot_][head_];
    if (e.when > until) return false;
    out = e;
    ++head_;
    --size_;
    last_when_ = out.when;
    last_seq_ = out.seq;
    return true;
  }

  // The earliest live event's time, or kTimeNever when none.
  TimePs next_time();

  bool empty() { return next_time() == kTimeNever; }

 private:
  static constexpr unsigned kLevels = 8;
  static constexpr unsigned kSlots = 256;
  struct Level {
    std::array<std::uint64_t, 4> occupied{};  // bit s set when slot s has events
    std::array<std::vector<Event>, kSlots> slots;
  };
  static unsigned level_of(TimePs when, TimePs last) {
    const TimePs diff = when ^ last;
    return diff == 0 ? 0 : static_cast<unsigned>(63 - __builtin_clzll(diff)) / 8;
  }
  void place(const Event& e) {
    const unsigned level = level_of(e.when, last_);
    const unsigned slot = static_cast<unsigned>(e.when >> (8 * level)) & 0xFF;
    Level& l = levels_[level];
    l.slots[slot].push_back(e);
    l.occupied[slot >> 6] |= 1ULL << (slot & 63);
    occupied_levels_ |= 1U << level;
    // A peek may have stepped the head past this time (nothing popped from the head slot yet):
    // step it back, since level-0 slots before the head must be empty.
    if (level == 0 && slot < head_slot_ && head_slot_ != kSlots && head_ == 0) head_slot_ = slot;
  }
  [[noreturn]] static void throw_push_in_past();
  // The level and slot holding the earliest live event, and its time; false when none. Changes
  // nothing but the head index past cancelled events.
  bool find_min(unsigned& level, unsigned& slot, TimePs& when);
  // Makes the head of level 0 the earliest live event, if it is at or before `until`.
  bool refill(TimePs until);
  void compact();

  std::array<Level, kLevels> levels_;
  std::uint32_t occupied_levels_ = 0;   // bit L set when level L has events
  unsigned head_slot_ = kSlots;         // the level-0 slot being popped, kSlots when none
  std::size_t head_ = 0;                // next event to pop in that slot
  std::size_t size_ = 0;                // events held, cancelled ones included
  // The radix reference: every held event's time is at or after it, and an event's level is the
  // highest 8-bit digit in which its time differs from it.
  TimePs last_ = 0;
  // Cancelled sequence numbers: of events still held, and of events already dropped (kept so a
  // second cancel is refused); cleared by compaction.
  std::unordered_set<std::uint64_t> cancelled_;
  // Cancelled events still in the slots. Only these slow pops down: once every cancelled event
  // has been dropped, pops take the fast path again though the tombstones stay (they keep a
  // repeated cancel returning false until the next compaction).
  std::size_t cancels_pending_ = 0;
  std::uint64_t next_seq_ = 1;
  TimePs last_when_ = 0;          // key of the last event popped: events at or before it
  std::uint64_t last_seq_ = 0;    // have already run
};

}  // namespace syntorch::sim
