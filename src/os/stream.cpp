#include "syntorch/os/stream.hpp"

#include <algorithm>
#include <stdexcept>

namespace syntorch::os {

Stream::Stream(sim::Simulator& sim, std::uint32_t device, std::uint32_t index)
    : sim_(sim), device_(device), index_(index) {}

void Stream::enqueue(sim::TimePs ready_ps, WorkItem work) {
  queue_.push_back({ready_ps, work});
  if (!running_ && queue_.size() == 1) schedule_start();
}

void Stream::schedule_start() {
  if (start_pending_ || queue_.empty()) return;
  start_pending_ = true;
  sim_.at<&Stream::start_due>(std::max(queue_.front().ready_ps, sim_.now()), this);
}

void Stream::start_due() {
  start_pending_ = false;
  try_start();
}

void Stream::try_start() {
  if (running_ || queue_.empty()) return;
  if (queue_.front().ready_ps > sim_.now()) {
    schedule_start();
    return;
  }
  const WorkItem work = queue_.front().work;
  queue_.pop_front();
  running_ = true;
  current_start_ps_ = sim_.now();
  ++started_;
  work.start(work.obj, work.arg, *this);
}

void Stream::end_current() {
  if (!running_) throw std::logic_error("Stream::finish_current with nothing running");
  running_ = false;
  busy_ps_ += sim_.now() - current_start_ps_;
}

void Stream::finish_current() {
  end_current();
  if (!queue_.empty()) {
    schedule_start();
  } else if (idle_fn_) {
    const sim::EventFn fn = idle_fn_;
    idle_fn_ = nullptr;
    sim_.after(0, fn, idle_obj_, idle_arg_);
  }
}

void Stream::finish_current_and_continue() {
  if (queue_.empty() || start_pending_ || queue_.front().ready_ps > sim_.now()) {
    finish_current();
    return;
  }
  end_current();
  try_start();
}

void Stream::notify_when_idle(sim::EventFn fn, void* obj, std::uint64_t arg) {
  if (idle()) {
    sim_.after(0, fn, obj, arg);
    return;
  }
  idle_fn_ = fn;
  idle_obj_ = obj;
  idle_arg_ = arg;
}

}  // namespace syntorch::os
