#include "syntorch/sim/event_queue.hpp"

#include <algorithm>

namespace syntorch::sim {

EventId EventQueue::push(TimePs when, EventFn fn, void* obj, std::uint64_t arg) {
  const Event e{when, next_seq_++, fn, obj, arg};
  heap_.push_back(e);
  sift_up(heap_.size() - 1, e);
  return EventId{when, e.seq};
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.seq >= next_seq_) return false;
  // Events pop in (when, seq) order, so anything at or before the last popped key has run.
  if (id.when < last_when_ || (id.when == last_when_ && id.seq <= last_seq_)) return false;
  const bool inserted = cancelled_.insert(id.seq).second;
  if (inserted && cancelled_.size() * 2 > heap_.size() + 64) compact();
  return inserted;
}

bool EventQueue::pop(Event& out) {
  drop_cancelled_top();
  if (heap_.empty()) return false;
  out = heap_.front();
  remove_top();
  last_when_ = out.when;
  last_seq_ = out.seq;
  return true;
}

TimePs EventQueue::next_time() {
  drop_cancelled_top();
  return heap_.empty() ? kTimeNever : heap_.front().when;
}

void EventQueue::drop_cancelled_top() {
  while (!cancelled_.empty() && !heap_.empty()) {
    auto it = cancelled_.find(heap_.front().seq);
    if (it == cancelled_.end()) return;
    cancelled_.erase(it);
    // Everything before the top has run, so the dropped event now counts as past: a second
    // cancel of it returns false.
    last_when_ = heap_.front().when;
    last_seq_ = heap_.front().seq;
    remove_top();
  }
}

void EventQueue::remove_top() {
  const Event last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0, last);
}

void EventQueue::sift_up(std::size_t i, Event e) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void EventQueue::sift_down(std::size_t i, Event e) {
  const std::size_t n = heap_.size();
  for (;;) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t last = std::min(first + 4, n);
    for (std::size_t c = first + 1; c < last; ++c) {
      if (earlier(heap_[c], heap_[best])) best = c;
    }
    if (!earlier(heap_[best], e)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = e;
}

void EventQueue::compact() {
  std::erase_if(heap_, [this](const Event& e) { return cancelled_.count(e.seq) != 0; });
  cancelled_.clear();
  // Rebuild bottom-up.
  if (heap_.size() > 1) {
    for (std::size_t i = (heap_.size() - 2) / 4 + 1; i-- > 0;) sift_down(i, heap_[i]);
  }
}

}  // namespace syntorch::sim
