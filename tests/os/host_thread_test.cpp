// Streams and the host thread: CUDA's ordering rules on the simulator.

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "syntorch/os/host_thread.hpp"
#include "syntorch/os/stream.hpp"

namespace {

using namespace syntorch;

// Device work that takes a fixed time and records when it ran.
struct FixedWork {
  explicit FixedWork(sim::Simulator* s) : sim(s) {}
  sim::Simulator* sim = nullptr;
  std::vector<std::pair<sim::TimePs, sim::TimePs>> runs;
  os::Stream* running = nullptr;
  static void start(void* obj, std::uint64_t duration, os::Stream& stream) {
    auto* self = static_cast<FixedWork*>(obj);
    self->runs.push_back({self->sim->now(), self->sim->now() + duration});
    self->running = &stream;
    self->sim->after(duration, &FixedWork::done, self, 0);
  }
  static void done(void* obj, std::uint64_t) { static_cast<FixedWork*>(obj)->running->finish_current(); }
};

class VectorSource final : public os::ActionSource {
 public:
  explicit VectorSource(std::vector<os::HostAction> actions) : actions_(std::move(actions)) {}
  bool next(os::HostAction& out) override {
    if (i_ == actions_.size()) return false;
    out = actions_[i_++];
    return true;
  }

 private:
  std::vector<os::HostAction> actions_;
  std::size_t i_ = 0;
};

os::HostAction launch(FixedWork& w, sim::TimePs host_ps, sim::TimePs latency_ps, sim::TimePs duration_ps) {
  os::HostAction a;
  a.op = os::HostAction::Launch{0, latency_ps, {&FixedWork::start, &w, duration_ps}};
  a.host_ps = host_ps;
  return a;
}

TEST(HostThread, KernelStartsAtTheLaterOfEnqueuePlusLatencyAndThePreviousEnd) {
  sim::Simulator sim;
  os::Stream stream(sim, 0, 0);
  FixedWork work(&sim);
  // Host: 10 per launch; device latency 3; kernels of 5 then 50 then 5.
  VectorSource source({launch(work, 10, 3, 5), launch(work, 10, 3, 50), launch(work, 10, 3, 5)});
  os::Stream* streams[] = {&stream};
  os::HostThread host(sim, source, streams, 0);
  host.start();
  sim.run();
  ASSERT_EQ(work.runs.size(), 3u);
  EXPECT_EQ(work.runs[0].first, 13u);  // launched at 10, +3 latency (device idle)
  EXPECT_EQ(work.runs[1].first, 23u);  // launched at 20, +3; the first ended at 18
  EXPECT_EQ(work.runs[2].first, 73u);  // ready at 33 but waits for the second (ends 73)
  EXPECT_EQ(host.finish_ps(), 30u);    // the host never waited: launches are asynchronous
  EXPECT_EQ(stream.busy_ps(), 60u);
}

TEST(HostThread, SynchronizeBlocksTheHostUntilTheDeviceIsIdlePlusSyncLatency) {
  sim::Simulator sim;
  os::Stream stream(sim, 0, 0);
  FixedWork work(&sim);
  os::HostAction sync;
  sync.op = os::HostAction::Sync{};
  os::HostAction after;
  after.host_ps = 7;
  VectorSource source({launch(work, 10, 3, 100), sync, after});
  os::Stream* streams[] = {&stream};
  os::HostThread host(sim, source, streams, 2);
  host.start();
  sim.run();
  // Kernel 13..113; the host notices at 115, then spends 7.
  EXPECT_EQ(host.finish_ps(), 122u);
  EXPECT_EQ(host.blocked_ps(), 105u);
  EXPECT_EQ(host.busy_ps(), 17u);
}

TEST(HostThread, ZeroHostCostLaunchesReachTheDeviceTogetherAsAGraphDoes) {
  sim::Simulator sim;
  os::Stream stream(sim, 0, 0);
  FixedWork work(&sim);
  os::HostAction graph_launch;
  graph_launch.host_ps = 5;
  VectorSource source({graph_launch, launch(work, 0, 3, 4), launch(work, 0, 3, 4), launch(work, 0, 3, 4)});
  os::Stream* streams[] = {&stream};
  os::HostThread host(sim, source, streams, 0);
  host.start();
  sim.run();
  ASSERT_EQ(work.runs.size(), 3u);
  EXPECT_EQ(work.runs[0].first, 8u);
  EXPECT_EQ(work.runs[1].first, 12u);  // back to back: no launch gaps
  EXPECT_EQ(work.runs[2].first, 16u);
  EXPECT_EQ(host.finish_ps(), 5u);
}

TEST(ActionQueue, DeliversEverythingInOrderAcrossThreadsWithBoundedBatches) {
  os::ActionQueue queue(7, 2);
  constexpr int kActions = 10000;
  std::thread producer([&] {
    for (int i = 0; i < kActions; ++i) {
      os::HostAction a;
      a.host_ps = static_cast<sim::TimePs>(i);
      queue.push(a);
    }
    queue.close();
  });
  os::HostAction a;
  int n = 0;
  while (queue.next(a)) {
    ASSERT_EQ(a.host_ps, static_cast<sim::TimePs>(n));
    ++n;
  }
  producer.join();
  EXPECT_EQ(n, kActions);
}

TEST(ActionQueue, AbortUnblocksAProducerWhoseConsumerStopped) {
  os::ActionQueue queue(1, 1);
  bool aborted = false;
  std::thread producer([&] {
    try {
      for (int i = 0; i < 100; ++i) queue.push(os::HostAction{});
    } catch (const os::QueueAborted&) {
      aborted = true;
    }
  });
  queue.abort();
  producer.join();
  EXPECT_TRUE(aborted);
}

}  // namespace
