#include <gtest/gtest.h>

#include <map>
#include <random>

#include "syntorch/sim/event_queue.hpp"

namespace syntorch::sim {
namespace {

void nop(void*, std::uint64_t) {}

// Same-time events scheduled from far away (they sit on a high level of the radix structure)
// and from close by (low level) still leave in insertion order.
TEST(EventQueue, SameTimeEventsFromDifferentDistancesStayFifo) {
  EventQueue q;
  const TimePs target = 0x12345678;
  q.push(target, &nop, nullptr, 1);  // far: differs from 0 in a high digit
  q.push(target, &nop, nullptr, 2);
  q.push(0x12340000, &nop, nullptr, 100);
  q.push(0x12345600, &nop, nullptr, 101);
  EventQueue::Event e{};
  ASSERT_TRUE(q.pop(e));
  EXPECT_EQ(e.arg, 100u);
  q.push(target, &nop, nullptr, 3);  // nearer
  ASSERT_TRUE(q.pop(e));
  EXPECT_EQ(e.arg, 101u);
  q.push(target, &nop, nullptr, 4);  // nearest: same high digits as the clock
  for (std::uint64_t want = 1; want <= 4; ++want) {
    ASSERT_TRUE(q.pop(e));
    EXPECT_EQ(e.when, target);
    EXPECT_EQ(e.arg, want);
  }
  EXPECT_FALSE(q.pop(e));
}

TEST(EventQueue, PushingBeforeTheLastPoppedTimeIsALogicError) {
  EventQueue q;
  q.push(100, &nop, nullptr, 0);
  EventQueue::Event e{};
  ASSERT_TRUE(q.pop(e));
  EXPECT_THROW(q.push(99, &nop, nullptr, 0), std::logic_error);
  EXPECT_NO_THROW(q.push(100, &nop, nullptr, 0));
}

// Peeking and cancelling never forbid scheduling at or after the current time.
TEST(EventQueue, PeekingOrDroppingCancelledEventsDoesNotMoveTheFloor) {
  EventQueue q;
  q.push(100, &nop, nullptr, 1);
  const EventId far = q.push(100'000'000, &nop, nullptr, 2);
  q.push(200'000'000, &nop, nullptr, 3);
  EventQueue::Event e{};
  ASSERT_TRUE(q.pop(e));
  EXPECT_TRUE(q.cancel(far));
  EXPECT_EQ(q.next_time(), 200'000'000u);         // looks past the cancelled event
  EXPECT_FALSE(q.pop_until(150'000'000, e));       // nothing due yet
  EXPECT_NO_THROW(q.push(500, &nop, nullptr, 4));  // still fine: after the last pop (100)
  EXPECT_FALSE(q.cancel(far));                     // cancelled before
  ASSERT_TRUE(q.pop(e));
  EXPECT_EQ(e.arg, 4u);
  ASSERT_TRUE(q.pop(e));
  EXPECT_EQ(e.arg, 3u);
  EXPECT_FALSE(q.pop(e));
}

// Random pushes (near, far, same time), pops and cancels against a reference ordered map keyed
// by (time, insertion number).
TEST(EventQueue, MatchesAReferenceOrderUnderRandomOperations) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 100; ++round) {
    EventQueue q;
    std::map<std::pair<TimePs, std::uint64_t>, std::uint64_t> ref;  // (when, tag) -> tag
    std::vector<std::pair<EventId, std::pair<TimePs, std::uint64_t>>> ids;
    TimePs now = 0;
    std::uint64_t tag = 0;
    for (int op = 0; op < 4000; ++op) {
      const auto r = rng() % 11;
      if (r == 10) {
        // Peek, then keep scheduling from the current time.
        const TimePs next = q.next_time();
        ASSERT_EQ(next, ref.empty() ? kTimeNever : ref.begin()->first.first);
        EventQueue::Event e{};
        if (now > 0) {
          ASSERT_FALSE(q.pop_until(now - 1, e));  // every held event is at or after now
        }
        continue;
      }
      if (r < 5) {
        TimePs when = now;
        switch (rng() % 4) {
          case 0: break;                                   // same time
          case 1: when += rng() % 256; break;              // level 0/1
          case 2: when += rng() % 1'000'000; break;        // microseconds ahead
          default: when += rng() % (1ULL << 45); break;    // far
        }
        ++tag;
        ids.push_back({q.push(when, &nop, nullptr, tag), {when, tag}});
        ref[{when, tag}] = tag;
      } else if (r < 9) {
        EventQueue::Event e{};
        const bool got = q.pop(e);
        ASSERT_EQ(got, !ref.empty());
        if (!got) continue;
        ASSERT_EQ(e.when, ref.begin()->first.first);
        ASSERT_EQ(e.arg, ref.begin()->second);
        ref.erase(ref.begin());
        now = e.when;
      } else if (!ids.empty()) {
        const auto& [id, key] = ids[rng() % ids.size()];
        const bool pending = ref.count(key) != 0;
        EXPECT_EQ(q.cancel(id), pending);
        ref.erase(key);
      }
    }
    EventQueue::Event e{};
    while (q.pop(e)) {
      ASSERT_FALSE(ref.empty());
      ASSERT_EQ(e.arg, ref.begin()->second);
      ref.erase(ref.begin());
    }
    EXPECT_TRUE(ref.empty());
  }
}

}  // namespace
}  // namespace syntorch::sim
