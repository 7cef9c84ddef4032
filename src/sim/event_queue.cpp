#include "syntorch/sim/event_queue.hpp"

#include <algorithm>
#include <stdexcept>

namespace syntorch::sim {

void EventQueue::throw_push_in_past() {
  throw std::logic_error("EventQueue::push: time earlier than the last event popped");
}

unsigned EventQueue::lowest_slot(const Level& level) {
  for (unsigned w = 0; w < 4; ++w) {
    if (level.occupied[w]) return w * 64 + static_cast<unsigned>(__builtin_ctzll(level.occupied[w]));
  }
  return kSlots;
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.seq >= next_seq_) return false;
  // Events pop in (when, seq) order, so anything at or before the last popped key has run.
  if (id.when < last_when_ || (id.when == last_when_ && id.seq <= last_seq_)) return false;
  const bool inserted = cancelled_.insert(id.seq).second;
  if (inserted && cancelled_.size() * 2 > size_ + 64) compact();
  return inserted;
}

bool EventQueue::refill() {
  for (;;) {
    if (head_slot_ != kSlots) {
      std::vector<Event>& slot = levels_[0].slots[head_slot_];
      if (head_ < slot.size()) {
        if (cancelled_.empty()) return true;
        auto it = cancelled_.find(slot[head_].seq);
        if (it == cancelled_.end()) return true;
        // Dropped at the head: everything before it has run, so it now counts as past.
        cancelled_.erase(it);
        last_when_ = slot[head_].when;
        last_seq_ = slot[head_].seq;
        ++head_;
        --size_;
        continue;
      }
      // The slot is drained. Level-0 slots below it are empty (time never goes back), so the
      // next one, if any, is found from its word on.
      slot.clear();
      head_ = 0;
      Level& l0 = levels_[0];
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
        continue;
      }
      occupied_levels_ &= ~1U;
    }
    if (occupied_levels_ == 0) return false;
    const unsigned level = static_cast<unsigned>(__builtin_ctz(occupied_levels_));
    Level& l = levels_[level];
    const unsigned s = lowest_slot(l);
    if (level == 0) {
      // All events of a level-0 slot share one time: pop them in order.
      head_slot_ = s;
      last_ = (last_ & ~TimePs{0xFF}) | s;
      continue;
    }
    // Redistribute the slot around its earliest time; its events all fall to lower levels.
    std::vector<Event> moving;
    moving.swap(l.slots[s]);
    l.occupied[s >> 6] &= ~(1ULL << (s & 63));
    if (lowest_slot(l) == kSlots) occupied_levels_ &= ~(1U << level);
    TimePs min_when = moving[0].when;
    for (const Event& e : moving) min_when = std::min(min_when, e.when);
    last_ = min_when;
    for (const Event& e : moving) place(e);
    moving.clear();
    moving.swap(l.slots[s]);  // give the slot its capacity back
  }
}

TimePs EventQueue::next_time() { return refill() ? levels_[0].slots[head_slot_][head_].when : kTimeNever; }

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
}

}  // namespace syntorch::sim
