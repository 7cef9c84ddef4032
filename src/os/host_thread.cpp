#include "syntorch/os/host_thread.hpp"

#include "syntorch/sim/handler.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace syntorch::os {

ActionQueue::ActionQueue(std::size_t batch_size, std::size_t max_batches)
    : batch_size_(batch_size < 1 ? 1 : batch_size), max_batches_(max_batches < 1 ? 1 : max_batches) {
  filling_.reserve(batch_size_);
}

namespace {
// The hooks belong to the thread that waits: only it holds the lock (Python's) they release.
thread_local BlockingHooks t_hooks;

// The hooks around one wait of this thread.
struct Blocking {
  Blocking() {
    if (t_hooks.before) t_hooks.before();
  }
  ~Blocking() {
    if (t_hooks.after) t_hooks.after();
  }
  Blocking(const Blocking&) = delete;
  Blocking& operator=(const Blocking&) = delete;
};
}  // namespace

void set_thread_blocking_hooks(BlockingHooks hooks) { t_hooks = hooks; }

void RunGate::enter(Waiter& w) {
  const Blocking blocking;  // made before the lock and gone after it: hooks never run under it
  std::unique_lock lock(mutex_);
  while (!queue_.empty() && !queue_.front()->waiting) queue_.pop_front();  // admitted out of turn
  if (w.urgent || (free_ > 0 && queue_.empty())) {
    w.urgent = false;
    --free_;
    return;
  }
  w.waiting = true;
  w.admitted = false;
  queue_.push_back(&w);
  w.admitted_cv.wait(lock, [&] { return w.admitted; });  // the slot was taken for it
}

void RunGate::leave() {
  const std::lock_guard lock(mutex_);
  ++free_;
  while (free_ > 0 && !queue_.empty()) {
    Waiter* next = queue_.front();
    queue_.pop_front();
    if (!next->waiting) continue;  // admitted out of turn already
    --free_;
    next->waiting = false;
    next->admitted = true;
    next->admitted_cv.notify_one();
  }
}

void RunGate::yield(Waiter& w) {
  const Blocking blocking;
  std::unique_lock lock(mutex_);
  // The simulator asked for this program meanwhile (admit found it running): it keeps going.
  if (free_ >= 0 || w.urgent) {
    w.urgent = false;
    return;
  }
  ++free_;
  w.waiting = true;
  w.admitted = false;
  queue_.push_back(&w);
  w.admitted_cv.wait(lock, [&] { return w.admitted; });
}

void RunGate::admit(Waiter& w) {
  const std::lock_guard lock(mutex_);
  if (!w.waiting) {
    w.urgent = true;  // running, or not at the gate yet
    return;
  }
  --free_;  // over the count, until it leaves
  w.waiting = false;
  w.admitted = true;
  w.admitted_cv.notify_one();
}

void ActionQueue::wait_for_room(std::unique_lock<std::mutex>& lock) {
  auto room = [&] { return full_.size() < max_batches_ || aborted_; };
  if (room()) return;
  if (gate_) {
    lock.unlock();
    gate_->leave();
    lock.lock();
  }
  {
    const Blocking blocking;
    changed_.wait(lock, room);
    lock.unlock();  // the hooks run with the queue unlocked
  }
  lock.lock();
  if (gate_) {
    lock.unlock();
    gate_->enter(waiter_);
    lock.lock();  // only this producer adds batches: there is still room
  }
}

void ActionQueue::push(const HostAction& action) {
  if (aborted_flag_.load(std::memory_order_relaxed)) {
    // Nobody listens any more. Unwind the program, unless it is unwinding already (a destructor
    // pushing its closing action): then the action is simply dropped.
    if (std::uncaught_exceptions() > 0) return;
    throw QueueAborted{};
  }
  if (pending_host_ps_ > 0) {
    const sim::TimePs ps = pending_host_ps_;
    pending_host_ps_ = 0;
    // An action that marks its time (a note: a scope's begin or end) keeps its own start.
    const bool takes_host_time = std::holds_alternative<HostAction::HostOnly>(action.op) ||
                                 std::holds_alternative<HostAction::Launch>(action.op);
    if (takes_host_time && !action.note) {
      HostAction a = action;
      a.host_ps += ps;
      append(a);
      return;
    }
    HostAction gap;
    gap.host_ps = ps;
    append(gap);
  }
  append(action);
}

void ActionQueue::append(const HostAction& action) {
  filling_.push_back(action);
  if (filling_.size() >= batch_size_) {
    std::unique_lock lock(mutex_);
    wait_for_room(lock);
    if (aborted_) {
      filling_.clear();
      if (std::uncaught_exceptions() > 0) return;
      throw QueueAborted{};
    }
    publish_locked_batch();
    // Let in out of turn, a program queues again once the simulator has a good lead on it.
    if (gate_ && full_.size() >= (max_batches_ + 1) / 2) {
      lock.unlock();
      gate_->yield(waiter_);
    }
  }
}

void ActionQueue::publish_locked_batch() {
  full_.push_back(std::move(filling_));
  if (!spare_.empty()) {
    filling_ = std::move(spare_.back());
    spare_.pop_back();
  } else {
    filling_ = {};
    filling_.reserve(batch_size_);
  }
  filling_.clear();
  changed_.notify_all();
}

void ActionQueue::close() {
  if (pending_host_ps_ > 0 && !aborted_flag_.load(std::memory_order_relaxed)) {
    HostAction gap;
    gap.host_ps = pending_host_ps_;
    filling_.push_back(gap);  // the last batch: published below, whatever its size
  }
  pending_host_ps_ = 0;
  std::unique_lock lock(mutex_);
  if (!filling_.empty() && !aborted_) {
    wait_for_room(lock);
    if (!aborted_) publish_locked_batch();
  }
  closed_ = true;
  changed_.notify_all();
}

std::uint64_t ActionQueue::push_and_wait(const HostAction& action) {
  push(action);
  std::unique_lock lock(mutex_);
  if (!filling_.empty() && !aborted_) {
    wait_for_room(lock);
    if (!aborted_) publish_locked_batch();
  }
  if (aborted_) {
    filling_.clear();
    throw QueueAborted{};
  }
  if (gate_) {
    lock.unlock();
    gate_->leave();  // the simulator runs meanwhile, and other programs may
    lock.lock();
  }
  {
    const Blocking blocking;
    changed_.wait(lock, [&] { return answered_ || aborted_; });
    lock.unlock();  // the hooks run with the queue unlocked
  }
  if (gate_) gate_->enter(waiter_);
  lock.lock();
  if (!answered_) throw QueueAborted{};
  answered_ = false;
  return answer_;
}

void ActionQueue::answer(std::uint64_t value) {
  const std::lock_guard lock(mutex_);
  answer_ = value;
  answered_ = true;
  changed_.notify_all();
}

void ActionQueue::abort() {
  std::unique_lock lock(mutex_);
  aborted_ = true;
  aborted_flag_.store(true, std::memory_order_relaxed);
  changed_.notify_all();
}

bool ActionQueue::next(HostAction& out) {
  if (drain_pos_ < draining_.size()) {
    out = draining_[drain_pos_++];
    // The producer wrote the batch on another core: ask for the next action's lines now, so
    // they are here when this rank's host thread steps again.
    if (drain_pos_ < draining_.size()) __builtin_prefetch(&draining_[drain_pos_]);
    if (drain_pos_ + 1 < draining_.size()) __builtin_prefetch(&draining_[drain_pos_ + 1]);
    return true;
  }
  std::unique_lock lock(mutex_);
  if (draining_.capacity() > 0) {  // the drained batch goes back for the producer to refill
    draining_.clear();
    spare_.push_back(std::move(draining_));
    draining_ = {};
  }
  if (full_.empty() && !closed_) {
    // The simulator waits for this program: it may run now, whatever the gate's count.
    if (gate_) {
      lock.unlock();
      gate_->admit(waiter_);
      lock.lock();
    }
    changed_.wait(lock, [&] { return !full_.empty() || closed_; });
  }
  if (full_.empty()) return false;
  draining_ = std::move(full_.front());
  full_.pop_front();
  changed_.notify_all();
  drain_pos_ = 0;
  out = draining_[drain_pos_++];
  return true;
}

HostThread::HostThread(sim::Simulator& sim, ActionSource& source, std::span<Stream* const> streams,
                       sim::TimePs sync_latency_ps)
    : sim_(sim),
      source_(source),
      streams_(streams.begin(), streams.end()),
      sync_latency_ps_(sync_latency_ps) {}

void HostThread::start() { sim_.after<&HostThread::step>(0, this); }

void HostThread::step() {
  if (!source_.next(current_)) {
    finished_ = true;
    finish_ps_ = sim_.now();
    return;
  }
  const sim::TimePs now = sim_.now();
  if (std::holds_alternative<HostAction::Sync>(current_.op)) {
    sync_begin_ps_ = now;
    streams_waited_ = streams_.size();
    if (streams_waited_ == 0) {
      sim_.after<&HostThread::sync_done>(sync_latency_ps_, this);
      return;
    }
    for (Stream* s : streams_) s->notify_when_idle(sim::handler<&HostThread::stream_idle>(), this, 0);
    return;
  }
  if (const auto* wait = std::get_if<HostAction::Wait>(&current_.op)) {
    if (wait->stream >= streams_.size()) throw std::logic_error("HostThread: wait on an unknown stream");
    sync_begin_ps_ = now;
    waiting_ = true;
    wait->work.start(wait->work.obj, wait->work.arg, *streams_[wait->stream]);
    return;
  }
  // Host time, then (a launch) the work to its stream, or (a sleep) idle time.
  sim::TimePs end = now + current_.host_ps;
  if (const auto* sleep = std::get_if<HostAction::SleepUntil>(&current_.op)) end = std::max(end, sleep->until_ps);
  if (current_.note) current_.note(current_.note_obj, current_, now, end);
  if (const auto* launch = std::get_if<HostAction::Launch>(&current_.op)) {
    if (launch->stream >= streams_.size()) throw std::logic_error("HostThread: launch on an unknown stream");
    streams_[launch->stream]->enqueue(end + launch->ready_delay_ps, launch->work);
  }
  busy_ps_ += current_.host_ps;
  sim_.at<&HostThread::step>(end, this);
}

void HostThread::release() {
  if (!waiting_) throw std::logic_error("HostThread::release without a wait");
  waiting_ = false;
  sim_.after<&HostThread::sync_done>(sync_latency_ps_, this);
}

void HostThread::stream_idle() {
  if (--streams_waited_ == 0) sim_.after<&HostThread::sync_done>(sync_latency_ps_, this);
}

void HostThread::sync_done() {
  const sim::TimePs now = sim_.now();
  blocked_ps_ += now - sync_begin_ps_;
  if (current_.note) current_.note(current_.note_obj, current_, sync_begin_ps_, now);
  step();
}

}  // namespace syntorch::os
