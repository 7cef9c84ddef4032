#pragma once
// A device stream, as in CUDA: work runs in the order it was enqueued, one item at a time; an
// item may start once its ready time has come (its enqueue time plus the device's launch latency)
// and the item before it has finished. What an item does is opaque here (a kernel, a collective,
// a copy): the OS layer knows only that it starts and, later, finishes.
// Invariant: at most one item is running; items start in FIFO order.

#include <cstdint>
#include <deque>

#include "syntorch/sim/simulator.hpp"

namespace syntorch::os {

class Stream;

// Starts a piece of device work. The work calls stream.finish_current() when it is done (at that
// moment or later); the stream then starts its next item.
using WorkFn = void (*)(void* obj, std::uint64_t arg, Stream& stream);

struct WorkItem {
  WorkFn start = nullptr;
  void* obj = nullptr;
  std::uint64_t arg = 0;
};

// A work item that calls obj->Method(arg, stream).
template <auto Method, class T>
WorkItem work_item(T* obj, std::uint64_t arg = 0) {
  return {[](void* o, std::uint64_t a, Stream& s) { (static_cast<T*>(o)->*Method)(a, s); }, obj, arg};
}
// A work item that calls obj->Method(*payload, stream); the payload must outlive the item.
template <auto Method, class T, class P>
WorkItem work_item(T* obj, const P* payload) {
  return {[](void* o, std::uint64_t a, Stream& s) { (static_cast<T*>(o)->*Method)(*reinterpret_cast<const P*>(a), s); },
          obj, reinterpret_cast<std::uint64_t>(payload)};
}

class Stream {
 public:
  Stream(sim::Simulator& sim, std::uint32_t device, std::uint32_t index);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  std::uint32_t device() const { return device_; }
  std::uint32_t index() const { return index_; }

  // Appends `work`; it starts no earlier than `ready_ps`.
  void enqueue(sim::TimePs ready_ps, WorkItem work);
  // Called by the running item when it is done. The next item starts in an event of its own (at
  // its ready time, or now after the events already queued now) ...
  void finish_current();
  // ... or, when it is ready already, within this call: for an item whose completion handler
  // does nothing after it (a kernel: the stream runs its next kernel as soon as one ends, and
  // a busy stream's kernels then cost no event of their own to start).
  void finish_current_and_continue();

  // Nothing queued and nothing running.
  bool idle() const { return !running_ && queue_.empty(); }
  // fn(obj, arg) runs (once) when the stream next becomes idle; right away (as an event now) if
  // it is idle already. One waiter at a time.
  void notify_when_idle(sim::EventFn fn, void* obj, std::uint64_t arg);

  // When the running item started, and the total time items have been running.
  sim::TimePs current_start_ps() const { return current_start_ps_; }
  sim::TimePs busy_ps() const { return busy_ps_; }
  std::uint64_t items_started() const { return started_; }

 private:
  struct Entry {
    sim::TimePs ready_ps;
    WorkItem work;
  };
  void start_due();  // the event schedule_start() queues
  void end_current();  // the running item's end (throws when nothing runs)
  void try_start();
  void schedule_start();

  sim::Simulator& sim_;
  std::uint32_t device_;
  std::uint32_t index_;
  std::deque<Entry> queue_;
  bool running_ = false;
  bool start_pending_ = false;  // a start_due event is queued
  sim::TimePs current_start_ps_ = 0;
  sim::TimePs busy_ps_ = 0;
  std::uint64_t started_ = 0;
  sim::EventFn idle_fn_ = nullptr;
  void* idle_obj_ = nullptr;
  std::uint64_t idle_arg_ = 0;
};

}  // namespace syntorch::os
