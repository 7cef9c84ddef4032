#pragma once
// A pool of identical servers (the SMs of a device, the copy engines of a link) handed out to
// requests in strict FIFO order: a request waits until enough servers are free and every earlier
// request has been served. Grants are delivered as events at the instant they happen, so a caller
// never re-enters itself. Busy server-time is integrated for utilisation.

#include <cstdint>
#include <deque>
#include <string>

#include "syntorch/sim/simulator.hpp"

namespace syntorch::sim {

class ServerPool {
 public:
  ServerPool(Simulator& sim, std::string name, std::uint32_t servers);
  ServerPool(const ServerPool&) = delete;
  ServerPool& operator=(const ServerPool&) = delete;

  // Asks for `count` servers (1..size()); fn(obj, arg) runs when they are granted.
  void acquire(std::uint32_t count, EventFn fn, void* obj, std::uint64_t arg = 0);
  // Takes `count` servers now if they are free and nobody is waiting.
  bool try_acquire(std::uint32_t count);
  // Returns servers to the pool and grants waiting requests that now fit.
  void release(std::uint32_t count);

  // Told after every change of the servers in use (for traces); one observer at a time.
  using UseObserver = void (*)(void* obj, std::uint64_t arg, std::uint32_t in_use);
  // The same, calling obj->Method(arg, in_use).
  template <auto Method, class T>
  void set_observer(T* obj, std::uint64_t arg) {
    set_observer([](void* o, std::uint64_t a, std::uint32_t in_use) { (static_cast<T*>(o)->*Method)(a, in_use); }, obj,
                 arg);
  }
  void set_observer(UseObserver fn, void* obj, std::uint64_t arg) {
    observer_ = fn;
    observer_obj_ = obj;
    observer_arg_ = arg;
  }

  const std::string& name() const { return name_; }
  std::uint32_t size() const { return size_; }
  std::uint32_t free() const { return free_; }
  std::uint32_t in_use() const { return size_ - free_; }
  std::size_t waiting() const { return waiting_.size(); }
  // Integral of servers in use over time, in server-picoseconds, up to now().
  double busy_server_ps() const;
  // Mean fraction of servers in use between time 0 and now().
  double utilisation() const;

 private:
  struct Request {
    std::uint32_t count;
    EventFn fn;
    void* obj;
    std::uint64_t arg;
  };
  void account();
  void grant_waiting();

  Simulator& sim_;
  std::string name_;
  std::uint32_t size_;
  std::uint32_t free_;
  std::deque<Request> waiting_;
  void notify() {
    if (observer_) observer_(observer_obj_, observer_arg_, size_ - free_);
  }
  UseObserver observer_ = nullptr;
  void* observer_obj_ = nullptr;
  std::uint64_t observer_arg_ = 0;
  double busy_server_ps_ = 0;
  TimePs last_account_ps_ = 0;
};

}  // namespace syntorch::sim
