#include "syntorch/trace/console_summary.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "syntorch/trace/recorder.hpp"

namespace syntorch::trace {
namespace {

constexpr TimePs kUs = 1'000'000;

// rank 0: ops [0,10us] containing two matmuls of 3 us; kernels gemm 2 x 1.5 us and softmax 0.25 us;
// a memory counter sampled three times; one instant and one flow.
struct KnownTrace {
  TrackId ops, stream, hbm;
  void write(Recorder& rec) {
    rec.add_process(0, "rank 0");
    ops = rec.add_thread_track(0, 1, "torch ops");
    stream = rec.add_thread_track(0, 7, "stream 7");
    hbm = rec.add_counter_track(0, "HBM allocated", "bytes");
    rec.counter(hbm, 0, 0);
    rec.counter(hbm, 1 * kUs, 4096);
    rec.span(ops, "aten::matmul", "op", 1 * kUs, 4 * kUs);
    rec.span(stream, "gemm", "kernel", 2 * kUs, 2 * kUs + kUs / 2 + kUs);
    rec.span(ops, "aten::matmul", "op", 5 * kUs, 8 * kUs);
    rec.span(stream, "gemm", "kernel", 6 * kUs, 7 * kUs + kUs / 2);
    rec.span(stream, "softmax", "kernel", 8 * kUs, 8 * kUs + kUs / 4);
    const std::uint64_t id = rec.next_flow_id();
    rec.flow_begin(id, ops, 6 * kUs);
    rec.flow_end(id, stream, 6 * kUs);
    rec.instant(ops, "sync", "host", 9 * kUs);
    rec.counter(hbm, 9 * kUs, 2048);
    rec.span(ops, "aten::linear", "op", 0, 10 * kUs);
  }
};

TEST(ConsoleSummary, TotalsCountsAndTimeSpanMatchAKnownTrace) {
  ConsoleSummary summary;
  Recorder rec;
  rec.attach(summary);
  KnownTrace trace;
  trace.write(rec);
  rec.finish();

  EXPECT_EQ(summary.first_ps(), 0u);
  EXPECT_EQ(summary.last_ps(), 10 * kUs);
  EXPECT_EQ(summary.counts().processes, 1u);
  EXPECT_EQ(summary.counts().tracks, 3u);
  EXPECT_EQ(summary.counts().spans, 6u);
  EXPECT_EQ(summary.counts().instants, 1u);
  EXPECT_EQ(summary.counts().counter_samples, 3u);
  EXPECT_EQ(summary.counts().flow_events, 2u);

  const auto matmul = summary.span_stats("op", "aten::matmul");
  ASSERT_TRUE(matmul.has_value());
  EXPECT_EQ(matmul->count, 2u);
  EXPECT_EQ(matmul->total_ps, 6 * kUs);
  EXPECT_EQ(matmul->max_ps, 3 * kUs);
  const auto gemm = summary.span_stats("kernel", "gemm");
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->count, 2u);
  EXPECT_EQ(gemm->total_ps, 3 * kUs);
  EXPECT_EQ(summary.category_stats("kernel")->total_ps, 3 * kUs + kUs / 4);
  EXPECT_EQ(summary.category_stats("op")->count, 3u);
  EXPECT_FALSE(summary.span_stats("kernel", "aten::matmul").has_value());
  EXPECT_FALSE(summary.category_stats("nope").has_value());

  const auto hbm = summary.counter_stats(trace.hbm);
  ASSERT_TRUE(hbm.has_value());
  EXPECT_EQ(hbm->samples, 3u);
  EXPECT_EQ(hbm->min, 0);
  EXPECT_EQ(hbm->max, 4096);
  EXPECT_EQ(hbm->last, 2048);
  EXPECT_FALSE(summary.counter_stats(trace.ops).has_value());
}

TEST(ConsoleSummary, PrintsTimeSpanCountsAndSpansPerCategoryByTotalTime) {
  std::stringstream out;
  ConsoleSummary summary(out);
  Recorder rec;
  rec.attach(summary);
  KnownTrace trace;
  trace.write(rec);
  rec.finish();  // prints to `out`

  const std::string want =
      "Trace summary\n"
      "  time span  0 s .. 10 us (10 us)\n"
      "  declared   1 processes, 3 tracks\n"
      "  events     6 spans, 1 instants, 3 counter samples, 2 flow events\n"
      "\n"
      "  category \"op\": 3 spans on 1 track(s), 16 us total, 160.0% of their time\n"
      "    name               count       total        mean    share\n"
      "    aten::linear           1       10 us       10 us   100.0%\n"
      "    aten::matmul           2        6 us        3 us    60.0%\n"
      "\n"
      "  category \"kernel\": 3 spans on 1 track(s), 3.25 us total, 32.5% of their time\n"
      "    name          count       total        mean    share\n"
      "    gemm              2        3 us      1.5 us    30.0%\n"
      "    softmax           1      250 ns      250 ns     2.5%\n"
      "\n"
      "  counters\n"
      "    track                      samples           min           max          last  unit\n"
      "    rank 0 / HBM allocated           3           0 B         4 KiB         2 KiB  bytes\n";
  EXPECT_EQ(out.str(), want);

  std::stringstream again;
  summary.print(again);
  EXPECT_EQ(again.str(), want);
}

TEST(ConsoleSummary, ShowsOnlyTheTopNNamesAndSumsTheRest) {
  ConsoleSummary summary(1);
  Recorder rec;
  rec.attach(summary);
  KnownTrace trace;
  trace.write(rec);
  rec.finish();
  std::stringstream out;
  summary.print(out);
  const std::string text = out.str();
  EXPECT_NE(text.find("    aten::linear           1       10 us       10 us   100.0%\n"
                      "    ... 1 more names: 2 spans, 6 us total\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    gemm           2        3 us      1.5 us    30.0%\n"
                      "    ... 1 more names: 1 spans, 250 ns total\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("softmax"), std::string::npos) << text;
}

TEST(ConsoleSummary, WithoutAStreamFinishPrintsNothingAndEmptyTraceSaysSo) {
  ConsoleSummary summary;
  Recorder rec;
  rec.attach(summary);
  rec.finish();
  std::stringstream out;
  summary.print(out);
  EXPECT_EQ(out.str(),
            "Trace summary\n"
            "  time span  (no events)\n"
            "  declared   0 processes, 0 tracks\n"
            "  events     0 spans, 0 instants, 0 counter samples, 0 flow events\n");
}

}  // namespace
}  // namespace syntorch::trace
