#include "syntorch/trace/recorder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "recording_sink.hpp"
#include "syntorch/trace/process_filter.hpp"

namespace syntorch::trace {
namespace {

using testing::RecordingSink;

TEST(Recorder, WithNoSinksIsDisabledAndEmittingDoesNothing) {
  Recorder rec;
  EXPECT_FALSE(rec.enabled());
  rec.add_process(0, "rank 0");
  const TrackId ops = rec.add_thread_track(0, 1, "ops");
  // Nothing is checked or forwarded while disabled: even nonsense costs only the enabled() branch.
  rec.span(ops, "x", "op", 10, 5);
  rec.span(TrackId{}, "x", "op", 0, 1, {{"k", 1}});
  rec.counter(ops, 0, 1.0);
  rec.instant(TrackId{1234}, "i", "c", 0);
  rec.flow_begin(rec.next_flow_id(), ops, 0);

  // A sink attached afterwards sees the declarations but none of those events.
  RecordingSink sink;
  rec.attach(sink);
  EXPECT_TRUE(rec.enabled());
  EXPECT_EQ(sink.log, (std::vector<std::string>{"begin", "process 0 rank 0 0",
                                                "track 0 thread pid=0 tid=1 ops unit= sort=0"}));
}

TEST(Recorder, LateSinkLearnsEveryProcessAndTrackBeforeAnyEvent) {
  Recorder rec;
  RecordingSink early;
  rec.attach(early);
  rec.add_process(3, "rank 3", 7);
  const TrackId mem = rec.add_counter_track(3, "HBM allocated", "bytes");
  rec.counter(mem, 5, 4096);
  RecordingSink late;
  rec.attach(late);
  const TrackId k = rec.add_thread_track(3, 2, "stream 7");
  rec.span(k, "gemm", "kernel", 10, 20);

  EXPECT_EQ(early.log, (std::vector<std::string>{
                           "begin", "process 3 rank 3 7", "track 0 counter pid=3 tid=0 HBM allocated unit=bytes sort=0",
                           "counter 0 5 4096", "track 1 thread pid=3 tid=2 stream 7 unit= sort=1",
                           "span 1 gemm kernel 10 20"}));
  EXPECT_EQ(late.log, (std::vector<std::string>{
                          "begin", "process 3 rank 3 7", "track 0 counter pid=3 tid=0 HBM allocated unit=bytes sort=0",
                          "track 1 thread pid=3 tid=2 stream 7 unit= sort=1", "span 1 gemm kernel 10 20"}));
}

TEST(Recorder, ADetachedSinkIsFinishedAndHearsNoMore) {
  Recorder rec;
  rec.add_process(1, "rank 0");
  const TrackId host = rec.add_thread_track(1, 1, "host");
  RecordingSink window;
  rec.attach(window);
  rec.span(host, "aten::mm", "op", 0, 5);
  rec.detach(window);
  rec.span(host, "aten::relu", "op", 5, 6);
  EXPECT_EQ(window.log, (std::vector<std::string>{"begin", "process 1 rank 0 1",
                                                  "track 0 thread pid=1 tid=1 host unit= sort=0",
                                                  "span 0 aten::mm op 0 5", "finish"}));
  EXPECT_THROW(rec.detach(window), std::invalid_argument);
}

TEST(ProcessFilter, PassesOnOneProcesssTracksAndEventsOnly) {
  Recorder rec;
  RecordingSink out;
  ProcessFilter filter(2, {&out});
  rec.attach(filter);
  rec.add_process(1, "rank 0");
  rec.add_process(2, "rank 1");
  const TrackId a = rec.add_thread_track(1, 1, "host");
  const TrackId b = rec.add_thread_track(2, 1, "host");
  const TrackId c = rec.add_counter_track(2, "HBM", "bytes");
  rec.span(a, "mine not", "op", 0, 1);
  rec.span(b, "mine", "op", 0, 1);
  rec.counter(c, 1, 2);
  rec.instant(a, "not", "mem", 1);
  rec.flow_begin(7, a, 0);
  rec.flow_end(7, b, 1);
  rec.finish();
  EXPECT_EQ(out.log, (std::vector<std::string>{"begin", "process 2 rank 1 2",
                                               "track 1 thread pid=2 tid=1 host unit= sort=0",
                                               "track 2 counter pid=2 tid=0 HBM unit=bytes sort=1",
                                               "span 1 mine op 0 1", "counter 2 1 2", "flow 2 7 1 1", "finish"}));
}

TEST(Recorder, FansOutEveryEventToEverySinkInCallOrder) {
  Recorder rec;
  RecordingSink a;
  RecordingSink b;
  rec.attach(a);
  rec.attach(b);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const TrackId c = rec.add_counter_track(0, "c");
  const std::uint64_t id = rec.next_flow_id();
  rec.span(t, "s", "cat", 1, 2, {{"a", 1}, {"b", "x"}});
  rec.instant(t, "i", "cat", 3);
  rec.counter(c, 4, 0.5);
  rec.flow_begin(id, t, 1);
  rec.flow_step(id, t, 2);
  rec.flow_end(id, t, 3);
  rec.finish();
  const std::vector<std::string> want{"begin",
                                      "process 0 p 0",
                                      "track 0 thread pid=0 tid=0 t unit= sort=0",
                                      "track 1 counter pid=0 tid=0 c unit= sort=1",
                                      "span 0 s cat 1 2 a b",
                                      "instant 0 i cat 3",
                                      "counter 1 4 0.5",
                                      "flow 0 1 0 1",
                                      "flow 1 1 0 2",
                                      "flow 2 1 0 3",
                                      "finish"};
  EXPECT_EQ(a.log, want);
  EXPECT_EQ(b.log, want);
}

TEST(Recorder, ArgsPassedAsSpanReachTheSinkUnchanged) {
  Recorder rec;
  RecordingSink sink;
  rec.attach(sink);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const Arg args[] = {{"bytes", std::uint64_t{4096}}, {"why", "policy"}};
  rec.span(t, "s", "c", 0, 1, args);
  rec.instant(t, "i", "c", 0, args);
  EXPECT_EQ(sink.log[3], "span 0 s c 0 1 bytes why");
}

TEST(Recorder, FinishFinishesEachSinkOnceAndDisablesTheRecorder) {
  Recorder rec;
  RecordingSink sink;
  rec.attach(sink);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  rec.finish();
  EXPECT_FALSE(rec.enabled());
  rec.span(t, "after", "c", 0, 1);
  rec.finish();
  EXPECT_EQ(sink.log.back(), "finish");
  EXPECT_EQ(std::count(sink.log.begin(), sink.log.end(), "finish"), 1);
}

TEST(Recorder, OwnedSinkStaysAliveAfterFinish) {
  Recorder rec;
  auto& sink = static_cast<RecordingSink&>(rec.attach(std::make_unique<RecordingSink>()));
  rec.add_process(0, "p");
  rec.finish();
  EXPECT_EQ(sink.log.back(), "finish");
}

TEST(Recorder, FlowIdsAreUniqueAndIncreasingFromOne) {
  Recorder rec;
  EXPECT_EQ(rec.next_flow_id(), 1u);
  EXPECT_EQ(rec.next_flow_id(), 2u);
  EXPECT_EQ(rec.next_flow_id(), 3u);
}

TEST(Recorder, TrackSortIndexDefaultsToDeclarationOrderWithinItsProcess) {
  Recorder rec;
  rec.add_process(0, "a");
  rec.add_process(1, "b", -5);
  const TrackId a0 = rec.add_thread_track(0, 10, "x");
  const TrackId b0 = rec.add_thread_track(1, 10, "y");
  const TrackId a1 = rec.add_counter_track(0, "c");
  const TrackId a2 = rec.add_thread_track(0, 11, "z", 42);
  EXPECT_EQ(rec.processes()[0].sort_index, 0);
  EXPECT_EQ(rec.processes()[1].sort_index, -5);
  EXPECT_EQ(rec.track(a0).sort_index, 0);
  EXPECT_EQ(rec.track(b0).sort_index, 0);
  EXPECT_EQ(rec.track(a1).sort_index, 1);
  EXPECT_EQ(rec.track(a2).sort_index, 42);
  EXPECT_EQ(rec.tracks().size(), 4u);
}

TEST(Recorder, RejectsDuplicateAndUndeclaredProcessesAndTracks) {
  Recorder rec;
  rec.add_process(0, "p");
  EXPECT_THROW(rec.add_process(0, "again"), std::invalid_argument);
  EXPECT_THROW(rec.add_thread_track(1, 0, "no such pid"), std::invalid_argument);
  EXPECT_THROW(rec.add_counter_track(1, "no such pid"), std::invalid_argument);
  rec.add_thread_track(0, 5, "t");
  EXPECT_THROW(rec.add_thread_track(0, 5, "same tid"), std::invalid_argument);
  rec.add_counter_track(0, "mem", "bytes");
  EXPECT_THROW(rec.add_counter_track(0, "mem", "bytes"), std::invalid_argument);
  EXPECT_THROW((void)rec.track(TrackId{99}), std::invalid_argument);
}

TEST(Recorder, RejectsMalformedEventsWhileEnabled) {
  Recorder rec;
  RecordingSink sink;
  rec.attach(sink);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const TrackId c = rec.add_counter_track(0, "c");
  EXPECT_THROW(rec.span(t, "backwards", "c", 10, 9), std::invalid_argument);
  EXPECT_THROW(rec.span(c, "on counter", "c", 0, 1), std::invalid_argument);
  EXPECT_THROW(rec.instant(c, "on counter", "c", 0), std::invalid_argument);
  EXPECT_THROW(rec.flow_begin(1, c, 0), std::invalid_argument);
  EXPECT_THROW(rec.counter(t, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(rec.span(TrackId{}, "unknown", "c", 0, 1), std::invalid_argument);
  EXPECT_THROW(rec.counter(TrackId{7}, 0, 1.0), std::invalid_argument);
  // None of them reached the sink.
  EXPECT_EQ(sink.log.size(), 4u);
}

TEST(Recorder, AttachingTheSameSinkTwiceIsAnError) {
  Recorder rec;
  RecordingSink sink;
  rec.attach(sink);
  EXPECT_THROW(rec.attach(sink), std::invalid_argument);
}

TEST(ArgValue, KeepsTheTypeOfEachKindOfValue) {
  const std::string owned = "owned";
  const Arg args[] = {{"i", 5},
                      {"neg", std::int64_t{-7}},
                      {"u32", std::uint32_t{9}},
                      {"size", std::size_t{11}},
                      {"d", 2.5},
                      {"f", 0.25f},
                      {"b", true},
                      {"lit", "text"},
                      {"str", owned},
                      {"view", std::string_view("sv")}};
  EXPECT_EQ(args[0].value.type(), ArgValue::Type::kInt64);
  EXPECT_EQ(args[0].value.as_int64(), 5);
  EXPECT_EQ(args[1].value.as_int64(), -7);
  EXPECT_EQ(args[2].value.type(), ArgValue::Type::kUint64);
  EXPECT_EQ(args[2].value.as_uint64(), 9u);
  EXPECT_EQ(args[3].value.type(), ArgValue::Type::kUint64);
  EXPECT_EQ(args[4].value.type(), ArgValue::Type::kDouble);
  EXPECT_EQ(args[4].value.as_double(), 2.5);
  EXPECT_EQ(args[5].value.as_double(), 0.25);
  EXPECT_EQ(args[6].value.type(), ArgValue::Type::kBool);
  EXPECT_TRUE(args[6].value.as_bool());
  EXPECT_EQ(args[7].value.type(), ArgValue::Type::kString);
  EXPECT_EQ(args[7].value.as_string(), "text");
  EXPECT_EQ(args[8].value.as_string(), "owned");
  EXPECT_EQ(args[8].value.as_string().data(), owned.data());  // a view, not a copy
  EXPECT_EQ(args[9].value.as_string(), "sv");
}

}  // namespace
}  // namespace syntorch::trace
