#include <gtest/gtest.h>

#include <vector>

#include "syntorch/sim/simulator.hpp"

namespace syntorch::sim {
namespace {

struct Log {
  Simulator* sim = nullptr;
  std::vector<std::pair<TimePs, std::uint64_t>> seen;
  void hit(std::uint64_t tag) { seen.emplace_back(sim->now(), tag); }
};

TEST(Simulator, RunsEventsInTimeOrder) {
  Simulator sim;
  Log log{&sim, {}};
  sim.at<&Log::hit>(300, &log, 3);
  sim.at<&Log::hit>(100, &log, 1);
  sim.at<&Log::hit>(200, &log, 2);
  EXPECT_EQ(sim.run(), 3u);
  ASSERT_EQ(log.seen.size(), 3u);
  EXPECT_EQ(log.seen[0], (std::pair<TimePs, std::uint64_t>{100, 1}));
  EXPECT_EQ(log.seen[1], (std::pair<TimePs, std::uint64_t>{200, 2}));
  EXPECT_EQ(log.seen[2], (std::pair<TimePs, std::uint64_t>{300, 3}));
  EXPECT_EQ(sim.now(), 300u);
}

TEST(Simulator, SameTimeEventsRunInInsertionOrder) {
  Simulator sim;
  Log log{&sim, {}};
  for (std::uint64_t i = 0; i < 1000; ++i) sim.at<&Log::hit>(42, &log, i);
  sim.run();
  ASSERT_EQ(log.seen.size(), 1000u);
  for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(log.seen[i].second, i);
}

// An event that schedules another at the current time runs it after the ones already queued.
struct Chain {
  Simulator* sim;
  std::vector<int> order;
  void first() {
    order.push_back(1);
    sim->at<&Chain::third>(sim->now(), this);
  }
  void second() { order.push_back(2); }
  void third() { order.push_back(3); }
};

TEST(Simulator, EventScheduledAtNowRunsAfterQueuedSameTimeEvents) {
  Simulator sim;
  Chain c{&sim, {}};
  sim.at<&Chain::first>(10, &c);
  sim.at<&Chain::second>(10, &c);
  sim.run();
  EXPECT_EQ(c.order, (std::vector<int>{1, 2, 3}));
}

TEST(Simulator, CancelledEventDoesNotRun) {
  Simulator sim;
  Log log{&sim, {}};
  sim.at<&Log::hit>(100, &log, 1);
  EventId b = sim.at<&Log::hit>(200, &log, 2);
  sim.at<&Log::hit>(300, &log, 3);
  EXPECT_TRUE(sim.cancel(b));
  EXPECT_FALSE(sim.cancel(b));  // already cancelled
  sim.run();
  ASSERT_EQ(log.seen.size(), 2u);
  EXPECT_EQ(log.seen[0].second, 1u);
  EXPECT_EQ(log.seen[1].second, 3u);
}

TEST(Simulator, CancellingAnEventThatRanReturnsFalse) {
  Simulator sim;
  Log log{&sim, {}};
  EventId a = sim.at<&Log::hit>(100, &log, 1);
  sim.run();
  EXPECT_FALSE(sim.cancel(a));
  EXPECT_FALSE(sim.cancel(EventId{}));
}

TEST(Simulator, CancellingMostEventsCompactsAndKeepsOrder) {
  Simulator sim;
  Log log{&sim, {}};
  std::vector<EventId> ids;
  for (std::uint64_t i = 0; i < 5000; ++i) ids.push_back(sim.at<&Log::hit>(1000 + (i * 7919) % 5000, &log, i));
  for (std::uint64_t i = 0; i < 5000; ++i) {
    if (i % 10 != 0) {
      EXPECT_TRUE(sim.cancel(ids[i]));
    }
  }
  sim.run();
  ASSERT_EQ(log.seen.size(), 500u);
  for (std::size_t i = 1; i < log.seen.size(); ++i) EXPECT_LE(log.seen[i - 1].first, log.seen[i].first);
  for (const auto& [t, tag] : log.seen) EXPECT_EQ(tag % 10, 0u);
}

TEST(Simulator, RunUntilStopsBeforeLaterEvents) {
  Simulator sim;
  Log log{&sim, {}};
  sim.at<&Log::hit>(100, &log, 1);
  sim.at<&Log::hit>(500, &log, 2);
  EXPECT_EQ(sim.run(300), 1u);
  EXPECT_EQ(sim.now(), 300u);
  EXPECT_EQ(sim.run(), 1u);
  EXPECT_EQ(sim.now(), 500u);
}

TEST(Simulator, SchedulingAfterRunUntilOrACancelledTimeoutWorks) {
  Simulator sim;
  Log log{&sim, {}};
  sim.at<&Log::hit>(100, &log, 1);
  const EventId timeout = sim.at<&Log::hit>(1'000'000, &log, 2);
  sim.at<&Log::hit>(500, &log, 3);
  EXPECT_TRUE(sim.cancel(timeout));
  sim.run(300);
  EXPECT_EQ(sim.now(), 300u);
  sim.at<&Log::hit>(400, &log, 4);  // between now and the next event
  sim.run();
  ASSERT_EQ(log.seen.size(), 3u);
  EXPECT_EQ(log.seen[1], (std::pair<TimePs, std::uint64_t>{400, 4}));
  EXPECT_EQ(log.seen[2], (std::pair<TimePs, std::uint64_t>{500, 3}));
  sim.at<&Log::hit>(600, &log, 5);  // after the cancelled timeout was dropped
  sim.run(10'000);
  EXPECT_EQ(sim.now(), 10'000u);    // run(until) ends at until even with nothing left
}

TEST(Simulator, SchedulingInThePastIsALogicError) {
  Simulator sim;
  Log log{&sim, {}};
  sim.at<&Log::hit>(100, &log, 1);
  sim.run();
  EXPECT_THROW(sim.at<&Log::hit>(50, &log, 2), std::logic_error);
}

TEST(Simulator, TwoSimulatorsInOneProcessAreIndependent) {
  Simulator a;
  Simulator b;
  Log la{&a, {}};
  Log lb{&b, {}};
  a.at<&Log::hit>(10, &la, 1);
  b.at<&Log::hit>(20, &lb, 2);
  b.at<&Log::hit>(30, &lb, 3);
  EXPECT_EQ(a.run(), 1u);
  EXPECT_EQ(a.now(), 10u);
  EXPECT_EQ(b.now(), 0u);
  EXPECT_EQ(b.run(), 2u);
  EXPECT_EQ(la.seen.size(), 1u);
  EXPECT_EQ(lb.seen.size(), 2u);
}

struct Stopper {
  Simulator* sim;
  int runs = 0;
  void go() {
    ++runs;
    sim->stop();
  }
};

TEST(Simulator, StopReturnsAfterTheCurrentEvent) {
  Simulator sim;
  Stopper s{&sim};
  sim.at<&Stopper::go>(1, &s);
  sim.at<&Stopper::go>(2, &s);
  EXPECT_EQ(sim.run(), 1u);
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(sim.run(), 1u);
  EXPECT_EQ(s.runs, 2);
}

}  // namespace
}  // namespace syntorch::sim

namespace syntorch::sim {
namespace {
void nothing(void*, std::uint64_t) {}

TEST(Simulator, ADelayPastTheClocksEndIsAnOverflowNotAnEventInThePast) {
  Simulator sim;
  sim.at(1'000, &nothing, nullptr);
  sim.run();
  ASSERT_EQ(sim.now(), 1'000u);
  // now + delay would wrap to before now: that is the clock running out, said as such.
  EXPECT_THROW(sim.after(kTimeNever - 10, &nothing, nullptr), std::overflow_error);
  EXPECT_THROW((void)add_time(kTimeNever - 5, 5), std::overflow_error);
  EXPECT_EQ(add_time(5, 5), 10u);
  EXPECT_NO_THROW(sim.after(kTimeNever - 2'000, &nothing, nullptr));
}
}  // namespace
}  // namespace syntorch::sim
