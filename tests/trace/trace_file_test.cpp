#include "syntorch/trace/trace_file.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

using testing::kUs;
using testing::ScratchDir;
using testing::SimLikeTrace;

void write_sample(const std::filesystem::path& path) {
  Recorder rec;
  rec.attach(open_trace_writer(path));
  SimLikeTrace sample;
  sample.write(rec);
  rec.finish();
}

std::map<std::string, const TrackSummary*> by_name(const TraceFileSummary& s) {
  std::map<std::string, const TrackSummary*> out;
  for (const TrackSummary& t : s.tracks) out[t.process + " / " + t.track] = &t;
  return out;
}

void expect_track(const TraceFileSummary& s, const std::string& name, std::uint64_t events, TimePs first,
                  TimePs last) {
  const auto tracks = by_name(s);
  const auto it = tracks.find(name);
  ASSERT_NE(it, tracks.end()) << name << " not in\n" << format_trace_summary(s);
  EXPECT_EQ(it->second->events, events) << name;
  EXPECT_EQ(it->second->first_ps, first) << name;
  EXPECT_EQ(it->second->last_ps, last) << name;
}

class TraceFile : public ::testing::Test {
 protected:
  ScratchDir dir_;
};

TEST_F(TraceFile, ChromeJsonPlainAndGzipGiveTheSameTracks) {
  for (const char* name : {"t.json", "t.json.gz"}) {
    write_sample(dir_ / name);
    const TraceFileSummary s = summarize_trace_file(dir_ / name);
    EXPECT_EQ(s.format, "chrome");
    expect_track(s, "rank 0 (H100) / host: torch ops", 3, 1 * kUs, 20 * kUs);
    expect_track(s, "rank 0 (H100) / stream 0", 5, 2 * kUs, 17 * kUs);
    expect_track(s, "rank 1 (H100) / stream 0", 4, 2 * kUs, 15 * kUs + kUs / 2);
    expect_track(s, "rank 0 (H100) / memory: alloc/free", 1, 1 * kUs, 1 * kUs);
    expect_track(s, "rank 0 (H100) / HBM allocated", 2, 0, 1 * kUs);
    expect_track(s, "interconnect / nvlink 0->1", 1, 6 * kUs, 6 * kUs);
    EXPECT_EQ(s.events, 15u + 2u + 9u);
    EXPECT_EQ(s.flow_endpoints, 8u);
    EXPECT_EQ(s.first_ps, 0u);
    EXPECT_EQ(s.last_ps, 20 * kUs);
  }
}

TEST_F(TraceFile, PerfettoGivesTheSameTracksAsChromeJson) {
  write_sample(dir_ / "t.pftrace");
  const TraceFileSummary s = summarize_trace_file(dir_ / "t.pftrace");
  EXPECT_EQ(s.format, "perfetto");
  expect_track(s, "rank 0 (H100) / host: torch ops", 3, 1 * kUs, 20 * kUs);
  expect_track(s, "rank 0 (H100) / stream 0", 5, 2 * kUs, 17 * kUs);
  expect_track(s, "rank 1 (H100) / HBM allocated", 2, 0, 1 * kUs);
  expect_track(s, "interconnect / nvlink 0->1", 1, 6 * kUs, 6 * kUs);
  EXPECT_EQ(s.events, 15u + 2u + 9u);
  EXPECT_EQ(s.flow_endpoints, 8u);
  EXPECT_EQ(s.tracks.size(), 11u);  // 5 per rank and the link
  // Order of declaration.
  EXPECT_EQ(s.tracks.front().track, "host: torch ops");
  EXPECT_EQ(s.tracks.back().track, "nvlink 0->1");
}

TEST_F(TraceFile, ChakraReadsTheRankFilesByPrefixOrOneByOne) {
  write_sample(dir_ / "run.et");
  const TraceFileSummary all = summarize_trace_file(dir_ / "run.et");
  EXPECT_EQ(all.format, "chakra");
  ASSERT_EQ(all.files.size(), 2u);
  // 14 + 1: a stream's durations add up to its busy time rounded once, so the last 1.5 us kernel
  // gets 1 us after the 2.5 us one before it was rounded up to 3.
  expect_track(all, "rank 0 / COMP_NODE", 2, 2 * kUs, 15 * kUs);
  expect_track(all, "rank 0 / COMM_COLL_NODE", 2, 6 * kUs, 17 * kUs);
  expect_track(all, "rank 0 / COMM_SEND_NODE", 1, 12 * kUs, 14 * kUs);
  expect_track(all, "rank 1 / COMM_RECV_NODE", 1, 12 * kUs, 14 * kUs);
  EXPECT_EQ(all.events, 9u);
  const TraceFileSummary one = summarize_trace_file(dir_ / "run.1.et");
  EXPECT_EQ(one.files.size(), 1u);
  EXPECT_EQ(one.events, 4u);
}

TEST_F(TraceFile, CsvCountsKernelRowsPerRankAndTrack) {
  write_sample(dir_ / "k.csv");
  const TraceFileSummary s = summarize_trace_file(dir_ / "k.csv");
  EXPECT_EQ(s.format, "csv");
  expect_track(s, "rank 0 / stream 0", 1, 2 * kUs, 4 * kUs + kUs / 2);
  expect_track(s, "rank 1 / stream 0", 1, 2 * kUs, 4 * kUs + kUs / 2);
  EXPECT_EQ(s.events, 2u);
}

TEST_F(TraceFile, TheSummaryTableNamesEveryTrackAndTheTotals) {
  write_sample(dir_ / "t.pftrace");
  const std::string text = format_trace_summary(summarize_trace_file(dir_ / "t.pftrace"));
  EXPECT_NE(text.find("perfetto trace: "), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 (H100)"), std::string::npos) << text;
  EXPECT_NE(text.find("memory: alloc/free"), std::string::npos) << text;
  EXPECT_NE(text.find("20.000"), std::string::npos) << text;
  EXPECT_NE(text.find("total: 26 events on 11 tracks, 0.000 us .. 20.000 us (span 20.000 us), 8 flow endpoints"),
            std::string::npos)
      << text;
}

std::string error_of(const std::filesystem::path& path) {
  try {
    summarize_trace_file(path);
  } catch (const TraceFileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return {};
}

TEST_F(TraceFile, BadFilesAreErrorsNamingThem) {
  testing::write_file(dir_ / "garbage.json", "{\"traceEvents\": [ {\"ph\": ");
  testing::write_file(dir_ / "object.json", "{\"other\": 1}");
  testing::write_file(dir_ / "text.pftrace", "this is not protobuf at all");
  testing::write_file(dir_ / "empty.et", "");
  testing::write_file(dir_ / "bad.csv", "a,b\n1,2\n");
  write_sample(dir_ / "t.pftrace");
  const std::string whole = testing::read_file(dir_ / "t.pftrace");
  testing::write_file(dir_ / "cut.pftrace", whole.substr(0, whole.size() - 3));
  for (const char* name : {"garbage.json", "object.json", "text.pftrace", "empty.et", "bad.csv", "cut.pftrace",
                           "missing.json", "missing.et", "trace.txt"}) {
    const std::string what = error_of(dir_ / name);
    EXPECT_NE(what.find((dir_ / name).string()), std::string::npos) << what;
  }
  EXPECT_NE(error_of(dir_ / "cut.pftrace").find("ends inside a packet"), std::string::npos);
  EXPECT_NE(error_of(dir_ / "missing.json").find("no such file"), std::string::npos);
  EXPECT_NE(error_of(dir_ / "bad.csv").find("\"rank\""), std::string::npos);
  EXPECT_NE(error_of(dir_ / "trace.txt").find(".pftrace"), std::string::npos);
  EXPECT_NE(error_of(dir_.path()).find("cannot tell"), std::string::npos);
}

TEST_F(TraceFile, AnEmptyPerfettoTraceHasNoEvents) {
  testing::write_file(dir_ / "empty.pftrace", "");
  const TraceFileSummary s = summarize_trace_file(dir_ / "empty.pftrace");
  EXPECT_EQ(s.events, 0u);
  EXPECT_TRUE(s.tracks.empty());
  EXPECT_NE(format_trace_summary(s).find("total: 0 events on 0 tracks"), std::string::npos);
}

}  // namespace
}  // namespace syntorch::trace
