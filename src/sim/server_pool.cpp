#include "syntorch/sim/server_pool.hpp"

#include <stdexcept>

namespace syntorch::sim {

ServerPool::ServerPool(Simulator& sim, std::string name, std::uint32_t servers)
    : sim_(sim), name_(std::move(name)), size_(servers), free_(servers) {
  if (servers == 0) throw std::invalid_argument("ServerPool '" + name_ + "' needs at least one server");
}

void ServerPool::account() {
  const TimePs now = sim_.now();
  busy_server_ps_ += static_cast<double>(size_ - free_) * static_cast<double>(now - last_account_ps_);
  last_account_ps_ = now;
}

bool ServerPool::try_acquire(std::uint32_t count) {
  if (count == 0 || count > size_) throw std::invalid_argument("ServerPool '" + name_ + "': bad request size");
  if (!waiting_.empty() || count > free_) return false;
  account();
  free_ -= count;
  notify();
  return true;
}

void ServerPool::acquire(std::uint32_t count, EventFn fn, void* obj, std::uint64_t arg) {
  if (try_acquire(count)) {
    sim_.at(sim_.now(), fn, obj, arg);
    return;
  }
  waiting_.push_back(Request{count, fn, obj, arg});
}

void ServerPool::release(std::uint32_t count) {
  if (count > size_ - free_) throw std::logic_error("ServerPool '" + name_ + "': released more than in use");
  account();
  free_ += count;
  notify();
  grant_waiting();
}

void ServerPool::grant_waiting() {
  while (!waiting_.empty() && waiting_.front().count <= free_) {
    const Request r = waiting_.front();
    waiting_.pop_front();
    free_ -= r.count;
    notify();
    sim_.at(sim_.now(), r.fn, r.obj, r.arg);
  }
}

double ServerPool::busy_server_ps() const {
  return busy_server_ps_ +
         static_cast<double>(size_ - free_) * static_cast<double>(sim_.now() - last_account_ps_);
}

double ServerPool::utilisation() const {
  const TimePs now = sim_.now();
  return now == 0 ? 0.0 : busy_server_ps() / (static_cast<double>(size_) * static_cast<double>(now));
}

}  // namespace syntorch::sim
