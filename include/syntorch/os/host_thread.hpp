#pragma once
// The host thread of one rank, on the host's own clock: it takes the actions its program issued,
// in order, and spends host time on each (framework dispatch, launch calls). A launch hands the
// work to a device stream, where it may start a launch latency later; a synchronisation blocks
// the thread until every stream of its device is idle, plus the time the host takes to notice.
// The program itself runs elsewhere (it never depends on time: tensors carry no data), so the
// thread only pulls what it issued, through an ActionSource.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "syntorch/os/stream.hpp"

namespace syntorch::os {

struct HostAction;
// Told when an action's host time begins and ends (for traces and step timings).
using NoteFn = void (*)(void* obj, const HostAction& action, sim::TimePs begin_ps, sim::TimePs end_ps);

// One action of a rank's program, as its host thread takes it: the host time it costs, what the
// thread does then (its op), and what its note, if any, is told besides the times (its detail).
// Trivially copyable: actions travel in batches through the program's queue.
struct HostAction {
  struct HostOnly {};  // host time only (a view, a scope mark, an allocation)
  struct Launch {      // then `work` goes to stream `stream`, which may start it ready_delay_ps later
    std::uint16_t stream = 0;
    sim::TimePs ready_delay_ps = 0;
    WorkItem work;
  };
  struct Sync {};  // wait until the device's streams are idle
  struct SleepUntil {  // host time, then idle until the host's clock reads `until_ps`
    sim::TimePs until_ps = 0;
  };
  struct Wait {    // block until released: `work` is called (on stream `stream`) to arrange release()
    std::uint16_t stream = 0;
    WorkItem work;
  };
  using Op = std::variant<HostOnly, Launch, Sync, Wait, SleepUntil>;

  struct NoDetail {};
  struct LaunchOf {  // launch `index` of the `count` an op makes
    std::uint32_t index = 0;
    std::uint32_t count = 1;
  };
  struct MemoryChange {  // an allocation or a free, and the allocator's totals after it
    bool allocated = false;
    std::uint32_t handle = 0;
    std::uint64_t bytes = 0;
    std::uint64_t allocated_bytes = 0;
    std::uint64_t reserved_bytes = 0;
  };
  struct StreamCreated {
    std::uint32_t id = 0;
  };
  using Detail = std::variant<NoDetail, LaunchOf, MemoryChange, StreamCreated>;

  Op op;
  sim::TimePs host_ps = 0;  // host time the action costs
  Detail detail;
  NoteFn note = nullptr;    // optional
  void* note_obj = nullptr;
  const void* note_payload = nullptr;

  // A note that calls obj->Method(action, begin_ps, end_ps).
  template <auto Method, class T>
  void set_note(T* obj) {
    note = [](void* o, const HostAction& a, sim::TimePs b, sim::TimePs e) { (static_cast<T*>(o)->*Method)(a, b, e); };
    note_obj = obj;
  }
  // A note that calls obj->Method(*payload, action, begin_ps, end_ps); the payload must outlive
  // the action.
  template <auto Method, class T, class P>
  void set_note(T* obj, const P* payload) {
    note = [](void* o, const HostAction& a, sim::TimePs b, sim::TimePs e) {
      (static_cast<T*>(o)->*Method)(*static_cast<const P*>(a.note_payload), a, b, e);
    };
    note_obj = obj;
    note_payload = payload;
  }
};
static_assert(std::is_trivially_copyable_v<HostAction>);

// Where a host thread gets its next action. next() may block until the program issues one;
// it returns false once the program has ended and everything it issued has been taken.
class ActionSource {
 public:
  virtual ~ActionSource() = default;
  virtual bool next(HostAction& out) = 0;
};

// Thrown into a program whose consumer has stopped listening.
struct QueueAborted {};

// Run around every wait of a producer thread (for room in its queue, or at the gate), on that
// thread: a program holding a lock the others need to make progress (a Python interpreter's)
// gives it up while it waits. Per thread; none by default.
struct BlockingHooks {
  void (*before)() = nullptr;
  void (*after)() = nullptr;
};
void set_thread_blocking_hooks(BlockingHooks hooks);

// How many programs' threads run at once. A program holds a slot while it runs and gives it up
// while it waits for room in its queue or for an answer (push_and_wait), so hundreds of programs ready to run do not crowd the
// simulator's own thread off the machine's cores (they would take turns with it, and it is the
// one every program waits for). A program the simulator is waiting for goes in at once, over
// the count: the simulator would otherwise idle until the others filled their queues.
class RunGate {
 public:
  // One program's place at the gate (guarded by the gate).
  struct Waiter {
    std::condition_variable admitted_cv;
    bool waiting = false;
    bool admitted = false;
    bool urgent = false;  // admit at once, even over the count
  };
  explicit RunGate(std::size_t slots) : free_(slots < 1 ? 1 : static_cast<std::ptrdiff_t>(slots)) {}
  // Blocks until admitted: first come, first served as slots are left.
  void enter(Waiter& w);
  void leave();
  // The simulator waits for `w`'s program: admitted now (or at its next enter).
  void admit(Waiter& w);
  // After a program has given the simulator batches: while more programs run than the count
  // (one was admitted out of turn), this one queues again behind the others.
  void yield(Waiter& w);

 private:
  std::mutex mutex_;
  std::deque<Waiter*> queue_;
  std::ptrdiff_t free_;
};

// A bounded queue between a program running on its own OS thread (the producer) and the host
// thread on the simulator (the consumer). Actions travel in batches, so the two threads meet
// once per batch rather than once per action; the producer waits when `max_batches` are queued,
// which keeps memory flat however long the program runs.
class ActionQueue final : public ActionSource {
 public:
  explicit ActionQueue(std::size_t batch_size = 1024, std::size_t max_batches = 16);
  // The gate the producer's thread holds a slot of while it runs (none: it always runs); the
  // producer's thread enters it when it starts and leaves it when it ends.
  void set_gate(RunGate* gate) { gate_ = gate; }
  void enter_gate() {
    if (gate_) gate_->enter(waiter_);
  }
  void leave_gate() {
    if (gate_) gate_->leave();
  }

  // Producer side.
  void push(const HostAction& action);
  // Host time with nothing to show or run (an untraced view op): added to the next action's,
  // which then ends when the two would have ended one after the other, for one event instead of
  // two (a sync, a wait or an action with a note, whose start is observed, gets a plain host
  // action of it first).
  void add_host_time(sim::TimePs ps) { pending_host_ps_ += ps; }
  void close();  // the program has ended (flushes the last batch)
  // A round trip: publishes what was pushed, `action` last, and waits (out of the gate, with the
  // thread's blocking hooks) until the consumer answers, which `action`'s note does when the host
  // thread reaches it; returns the answer. The program then knows where the simulation stands at
  // that point of its own, and nothing else: every run gives the same answer. Throws QueueAborted
  // when the consumer gives up first.
  std::uint64_t push_and_wait(const HostAction& action);
  // The consumer gives up (the run ended early): a producer blocked in push(), or pushing later,
  // gets QueueAborted thrown, so its program unwinds (pushes made while unwinding, from
  // destructors, are dropped instead).
  void abort();

  // Consumer side.
  bool next(HostAction& out) override;
  // The answer to the producer waiting in push_and_wait (from the note of the action it pushed).
  void answer(std::uint64_t value);

 private:
  void publish_locked_batch();
  void append(const HostAction& action);  // to the batch being filled
  // Waits (the lock held) until a batch fits or the run is aborted, out of the gate meanwhile.
  void wait_for_room(std::unique_lock<std::mutex>& lock);

  std::size_t batch_size_;
  std::size_t max_batches_;
  std::vector<HostAction> filling_;           // producer only
  sim::TimePs pending_host_ps_ = 0;           // producer only: add_host_time's, not yet pushed
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<HostAction>> full_;  // guarded
  std::vector<std::vector<HostAction>> spare_;  // guarded: emptied batches for reuse
  bool closed_ = false;                       // guarded
  bool aborted_ = false;                      // guarded
  bool answered_ = false;                     // guarded: push_and_wait's answer is in
  std::uint64_t answer_ = 0;                  // guarded
  std::atomic<bool> aborted_flag_{false};     // the same, read without the lock
  std::vector<HostAction> draining_;          // consumer only
  std::size_t drain_pos_ = 0;
  RunGate* gate_ = nullptr;
  RunGate::Waiter waiter_;  // the producer's place at the gate
};

class HostThread {
 public:
  // `streams` are the device's streams, by index; add_stream appends one (before any action uses
  // it).
  HostThread(sim::Simulator& sim, ActionSource& source, std::span<Stream* const> streams, sim::TimePs sync_latency_ps);
  HostThread(const HostThread&) = delete;
  HostThread& operator=(const HostThread&) = delete;

  void start();  // begins at now()
  // Ends a wait action (now or later; then the host pays its sync latency and goes on).
  void release();
  void add_stream(Stream* stream) { streams_.push_back(stream); }
  bool finished() const { return finished_; }
  sim::TimePs finish_ps() const { return finish_ps_; }
  sim::TimePs busy_ps() const { return busy_ps_; }       // host time spent on actions
  sim::TimePs blocked_ps() const { return blocked_ps_; } // host time waiting in synchronisations

 private:
  // Events: the next action; a stream a synchronisation waits for is idle; the synchronisation
  // returns to the host.
  void step();
  void stream_idle();
  void sync_done();

  sim::Simulator& sim_;
  ActionSource& source_;
  std::vector<Stream*> streams_;
  sim::TimePs sync_latency_ps_;
  HostAction current_;
  std::size_t streams_waited_ = 0;
  bool waiting_ = false;
  sim::TimePs sync_begin_ps_ = 0;
  bool finished_ = false;
  sim::TimePs finish_ps_ = 0;
  sim::TimePs busy_ps_ = 0;
  sim::TimePs blocked_ps_ = 0;
};

}  // namespace syntorch::os
