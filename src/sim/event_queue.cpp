#include "syntorch/sim/event_queue.hpp"

#include <algorithm>
#include <stdexcept>

namespace syntorch::sim {

void EventQueue::throw_push_in_past() {
  throw std::logic_error("EventQueue::push: time earlier than the last event popped");
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.seq >= next_seq_) return false;
  // Anything before the last popped key has run; (when, seq) order is the pop order.
  // Events pop in (when, seq) order, so anything at or before the last popped key has run.
  if (id.when < last_when_ || (id.when == last_when_ && id.seq <= last_seq_)) return false;
  const bool inserted = cancelled_.insert(id.seq).second;
  if (inserted) ++cancels_pending_;
  if (inserted && cancelled_.size() * 2 > size_ + 64) compact();
  return inserted;
}

bool EventQueue::find_min(unsigned& level_out, unsigned& slot_out, TimePs& when_out) {
  auto live = [this](const Event& e) { return cancels_pending_ == 0 || cancelled_.count(e.seq) == 0; };
  if (head_slot_ != kSlots) {
    std::vector<Event>& head = levels_[0].slots[head_slot_];
    while (head_ < head.size() && !live(head[head_])) {  // dropped; its seq stays as a tombstone
      ++head_;
      --size_;
      --cancels_pending_;
    }
    if (head_ < head.size()) {
      level_out = 0;
      slot_out = head_slot_;
      when_out = head[head_].when;
      return true;
    }
  }
  // Levels hold ever later times, and slots within a level are in time order, so the first slot
  // with a live event holds the earliest one.
  for (std::uint32_t levels = occupied_levels_; levels != 0; levels &= levels - 1) {
    const auto level = static_cast<unsigned>(__builtin_ctz(levels));
    const Level& l = levels_[level];
    // Level-0 slots below the head slot are empty: time never goes back.
    const unsigned first_word = level == 0 && head_slot_ != kSlots ? head_slot_ >> 6 : 0;
    for (unsigned w = first_word; w < 4; ++w) {
      for (std::uint64_t bits = l.occupied[w]; bits != 0; bits &= bits - 1) {
        const unsigned s = w * 64 + static_cast<unsigned>(__builtin_ctzll(bits));
        if (level == 0 && s == head_slot_) continue;  // drained above
        const std::vector<Event>& events = l.slots[s];
        TimePs best = kTimeNever;
        if (level == 0) {
          // One time per level-0 slot: the first live event says it.
          for (const Event& e : events) {
            if (live(e)) {
              best = e.when;
              break;
            }
          }
        } else {
          for (const Event& e : events) {
            if (e.when < best && live(e)) best = e.when;
          }
        }
        if (best != kTimeNever) {
          level_out = level;
          slot_out = s;
          when_out = best;
          return true;
        }
      }
    }
  }
  return false;
}

bool EventQueue::refill(TimePs until) {
  // Fast path, with nothing cancelled: step the head to the next level-0 slot. This moves only
  // the reference's low digit, which no held event's placement depends on, so it is safe even
  // when the event found is not due yet.
  if (cancels_pending_ == 0 && head_slot_ != kSlots) {
    Level& l0 = levels_[0];
    std::vector<Event>& slot = l0.slots[head_slot_];
    if (head_ >= slot.size()) {
      slot.clear();
      head_ = 0;
      l0.occupied[head_slot_ >> 6] &= ~(1ULL << (head_slot_ & 63));
      unsigned next = kSlots;
      for (unsigned w = head_slot_ >> 6; w < 4; ++w) {
        if (l0.occupied[w]) {
          next = w * 64 + static_cast<unsigned>(__builtin_ctzll(l0.occupied[w]));
          break;
        }
      }
      head_slot_ = next;
      if (next != kSlots) {
        last_ = (last_ & ~TimePs{0xFF}) | next;
      } else {
        occupied_levels_ &= ~1U;
      }
    }
    if (head_slot_ != kSlots) return l0.slots[head_slot_][head_].when <= until;
  }
  for (;;) {
    unsigned level = 0;
    unsigned s = 0;
    TimePs when = 0;
    if (!find_min(level, s, when) || when > until) return false;
    if (level == 0) {
      if (s != head_slot_) {
        // Retire the drained head slot (its cancelled events are already tombstones).
        if (head_slot_ != kSlots) {
          std::vector<Event>& old = levels_[0].slots[head_slot_];
          old.clear();
          levels_[0].occupied[head_slot_ >> 6] &= ~(1ULL << (head_slot_ & 63));
        }
        head_slot_ = s;
        head_ = 0;
        last_ = (last_ & ~TimePs{0xFF}) | s;
        std::vector<Event>& slot = levels_[0].slots[s];
        while (cancels_pending_ != 0 && head_ < slot.size() && cancelled_.count(slot[head_].seq)) {
          ++head_;
          --size_;
          --cancels_pending_;
        }
      }
      return true;
    }
    // Redistribute the slot around its earliest live time; every event falls to a lower level.
    Level& l = levels_[level];
    std::vector<Event> moving;
    moving.swap(l.slots[s]);
    l.occupied[s >> 6] &= ~(1ULL << (s & 63));
    bool empty = true;
    for (unsigned w = 0; w < 4; ++w) empty = empty && l.occupied[w] == 0;
    if (empty) occupied_levels_ &= ~(1U << level);
    if (head_slot_ != kSlots) {
      // The old head slot is drained (find_min passed it): retire it before the reference moves.
      levels_[0].slots[head_slot_].clear();
      levels_[0].occupied[head_slot_ >> 6] &= ~(1ULL << (head_slot_ & 63));
      head_slot_ = kSlots;
      head_ = 0;
      bool l0_empty = true;
      for (unsigned w = 0; w < 4; ++w) l0_empty = l0_empty && levels_[0].occupied[w] == 0;
      if (l0_empty) occupied_levels_ &= ~1U;
    }
    last_ = when;
    for (const Event& e : moving) {
      if (cancels_pending_ != 0 && cancelled_.count(e.seq)) {
        --size_;  // dropped; its seq stays as a tombstone
        --cancels_pending_;
        continue;
      }
      place(e);
    }
    moving.clear();
    moving.swap(l.slots[s]);  // give the slot its capacity back
  }
}

TimePs EventQueue::next_time() {
  unsigned level = 0;
  unsigned s = 0;
  TimePs when = kTimeNever;
  return find_min(level, s, when) ? when : kTimeNever;
}

void EventQueue::compact() {
  auto dead = [this](const Event& e) { return cancelled_.count(e.seq) != 0; };
  if (head_slot_ != kSlots) {
    std::vector<Event>& slot = levels_[0].slots[head_slot_];
    slot.erase(slot.begin(), slot.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  size_ = 0;
  occupied_levels_ = 0;
  for (unsigned level = 0; level < kLevels; ++level) {
    Level& l = levels_[level];
    for (unsigned s = 0; s < kSlots; ++s) {
      std::erase_if(l.slots[s], dead);
      size_ += l.slots[s].size();
      if (l.slots[s].empty()) {
        l.occupied[s >> 6] &= ~(1ULL << (s & 63));
      } else {
        occupied_levels_ |= 1U << level;
      }
    }
  }
  if (head_slot_ != kSlots && levels_[0].slots[head_slot_].empty()) head_slot_ = kSlots;
  cancelled_.clear();
  cancels_pending_ = 0;
}

}  // namespace syntorch::sim
