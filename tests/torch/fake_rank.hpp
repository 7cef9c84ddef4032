#pragma once
// A RankContext that records what the torch layer asks of a rank: allocations (live bytes, peak,
// bytes by purpose), launched ops, host ops, copies, synchronisations, graph and scope marks.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "syntorch/runtime/rank_context.hpp"

namespace syntorch::torch::testing {

class FakeRank : public runtime::RankContext {
 public:
  struct Allocation {
    std::uint64_t bytes;
    os::MemoryUse use;
    std::string what;
  };
  struct Launch {
    runtime::OpDesc op;
    std::string name;
  };

  explicit FakeRank(std::uint64_t capacity_bytes = UINT64_MAX) : capacity_(capacity_bytes) {}

  int rank() const override { return 0; }
  int world_size() const override { return 1; }

  std::uint32_t allocate(std::uint64_t bytes, os::MemoryUse use, std::string_view what) override {
    if (live_bytes + bytes > capacity_) throw runtime::OutOfMemory(0, bytes, std::string(what));
    const std::uint32_t id = next_id_++;
    live[id] = Allocation{bytes, use, std::string(what)};
    live_bytes += bytes;
    peak_bytes = std::max(peak_bytes, live_bytes);
    by_use[static_cast<std::size_t>(use)] += bytes;
    ++allocations;
    return id;
  }
  void free(std::uint32_t handle) override {
    const auto it = live.find(handle);
    if (it == live.end()) {
      ++bad_frees;
      return;
    }
    live_bytes -= it->second.bytes;
    by_use[static_cast<std::size_t>(it->second.use)] -= it->second.bytes;
    live.erase(it);
    ++frees;
  }
  void set_memory_use(std::uint32_t handle, os::MemoryUse use) override {
    const auto it = live.find(handle);
    if (it == live.end()) return;
    by_use[static_cast<std::size_t>(it->second.use)] -= it->second.bytes;
    it->second.use = use;
    by_use[static_cast<std::size_t>(use)] += it->second.bytes;
  }
  os::AllocatorStats memory_stats() const override {
    os::AllocatorStats s;
    s.allocated_bytes = live_bytes;
    s.peak_allocated_bytes = peak_bytes;
    s.recent_peak_allocated_bytes = peak_bytes;
    return s;
  }
  void empty_cache() override {}
  void set_policy(const runtime::KernelPolicy&) override {}
  void launch(const runtime::OpDesc& op, std::string_view name) override {
    launches.push_back(Launch{op, std::string(name)});
  }
  OpMemory op_memory(const runtime::OpDesc&) override { return {}; }
  void host_op(std::string_view name) override { host_ops.emplace_back(name); }
  void collective(const runtime::OpDesc& op, runtime::GroupId, std::string_view name) override {
    launches.push_back(Launch{op, std::string(name)});
  }
  void send(int, std::uint64_t, std::string_view) override {}
  void recv(int, std::uint64_t, std::string_view) override {}
  void copy_host_to_device(std::uint64_t bytes, std::string_view name) override {
    h2d.emplace_back(bytes, std::string(name));
  }
  void copy_device_to_host(std::uint64_t bytes, std::string_view name) override {
    d2h.emplace_back(bytes, std::string(name));
  }
  void copy_to_peer(int, std::uint64_t, std::string_view) override {}
  void copy_from_peer(int, std::uint64_t, std::string_view) override {}
  void synchronize(std::string_view reason) override { syncs.emplace_back(reason); }
  void graph_begin() override { events.emplace_back("graph_begin"); }
  std::uint64_t graph_end() override {
    events.emplace_back("graph_end");
    return ++graphs;
  }
  void graph_launch(std::uint64_t graph) override { events.push_back("graph_launch " + std::to_string(graph)); }
  void scope_begin(std::string_view name) override { events.push_back("begin " + std::string(name)); }
  void scope_end() override { events.emplace_back("end"); }
  runtime::GroupId new_group(const std::vector<int>&) override { return {}; }
  std::uint32_t new_stream() override {
    events.push_back("new_stream " + std::to_string(streams));
    return streams++;
  }
  void set_stream(std::uint32_t s) override {
    if (s >= streams) throw std::invalid_argument("unknown stream");
    stream = s;
  }
  std::uint32_t current_stream() const override { return stream; }
  std::uint64_t record_event(std::uint32_t s) override {
    events.push_back("record " + std::to_string(s) + " " + std::to_string(recorded + 1));
    return ++recorded;
  }
  void wait_event(std::uint32_t s, std::uint64_t e) override {
    events.push_back("wait " + std::to_string(s) + " " + std::to_string(e));
  }
  void synchronize_event(std::uint64_t e) override { syncs.push_back("event " + std::to_string(e)); }
  void synchronize_stream(std::uint32_t s) override { syncs.push_back("stream " + std::to_string(s)); }
  // The host clock: what a test sets it to; a sleep moves it on; every event completed at 0.
  double host_time_s() override { return clock_s; }
  void sleep_until_s(double t) override { clock_s = std::max(clock_s, t); }
  double event_time_s(std::uint64_t) override { return 0; }
  bool stream_idle(std::uint32_t) override { return true; }
  double clock_s = 0;

  std::uint64_t bytes_for(os::MemoryUse use) const { return by_use[static_cast<std::size_t>(use)]; }
  // The kinds of the launched ops, in order.
  std::vector<runtime::OpKind> kinds() const {
    std::vector<runtime::OpKind> out;
    for (const auto& l : launches) out.push_back(l.op.kind);
    return out;
  }
  const runtime::OpDesc& last() const { return launches.back().op; }
  bool has_host_op(const std::string& name) const {
    return std::find(host_ops.begin(), host_ops.end(), name) != host_ops.end();
  }

  std::map<std::uint32_t, Allocation> live;
  std::uint64_t live_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::array<std::uint64_t, os::kMemoryUses> by_use{};
  int allocations = 0;
  int frees = 0;
  int bad_frees = 0;
  std::vector<Launch> launches;
  std::vector<std::string> host_ops;
  std::vector<std::pair<std::uint64_t, std::string>> h2d;
  std::vector<std::pair<std::uint64_t, std::string>> d2h;
  std::vector<std::string> syncs;
  std::vector<std::string> events;
  std::uint32_t streams = 1;
  std::uint64_t graphs = 0;  // graphs captured so far
  std::uint32_t stream = 0;
  std::uint64_t recorded = 0;

 private:
  std::uint64_t capacity_;
  std::uint32_t next_id_ = 1;
};

// A test with a FakeRank current on this thread.
class OnRank : public ::testing::Test {
 protected:
  FakeRank rank;
  runtime::RankGuard guard{&rank};
};

// Runs `f` and returns the message of the torch::Error it throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace syntorch::torch::testing
