// `syntorch trace FILE`: a summary of every trace format the writers produce, and clear errors
// (exit 2) for files that are missing, malformed or of an unknown kind.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "run_cli.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;
namespace tr = syntorch::trace;

constexpr tr::TimePs kUs = 1'000'000;

class TraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           fmt::format("syntorch_trace_cli_{}_{}", info->name(), static_cast<long>(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // One rank: a host op with a kernel on stream 0 (a flow between), a collective, a counter.
  std::string write(const std::string& name) {
    const std::string path = (dir_ / name).string();
    tr::Recorder rec;
    rec.attach(tr::open_trace_writer(path));
    const std::int32_t pid = tr::pid_of_rank(0);
    rec.add_process(pid, "rank 0 (H100)");
    const tr::TrackId host = rec.add_thread_track(pid, 0, "host: torch ops");
    const tr::TrackId stream = rec.add_thread_track(pid, 1, "stream 0");
    const tr::TrackId hbm = rec.add_counter_track(pid, "HBM allocated", "bytes");
    rec.counter(hbm, 0, 1024);
    rec.flow_begin(1, host, 1 * kUs);
    rec.span(host, "aten::mm", "op", 1 * kUs, 2 * kUs);
    rec.flow_end(1, stream, 3 * kUs);
    rec.span(stream, "gemm", "kernel", 3 * kUs, 7 * kUs, {{"flops", 1e9}, {"hbm_bytes", 1e6}});
    rec.span(stream, "allreduce", "collective", 8 * kUs, 10 * kUs,
             {{"comm_type", "allreduce"}, {"comm_bytes", 4096}, {"group", "0"}});
    rec.counter(hbm, 10 * kUs, 0);
    rec.finish();
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(TraceCli, SummarisesChromeJsonPerTrack) {
  for (const char* name : {"t.json", "t.json.gz"}) {
    const Result r = run_cli({"trace", write(name)});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_NE(r.out.find("chrome trace: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rank 0 (H100)  host: torch ops"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("stream 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("HBM allocated"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("total: 5 events on 3 tracks, 0.000 us .. 10.000 us (span 10.000 us), 2 flow endpoints"),
              std::string::npos)
        << r.out;
  }
}

TEST_F(TraceCli, SummarisesPerfettoLikeChromeJson) {
  const Result r = run_cli({"trace", write("t.pftrace")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("perfetto trace: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 5 events on 3 tracks, 0.000 us .. 10.000 us (span 10.000 us), 2 flow endpoints"),
            std::string::npos)
      << r.out;
  // The stream's line: 2 events from 3 us to 10 us.
  const std::size_t at = r.out.find("stream 0");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream line(r.out.substr(at + 8, r.out.find('\n', at) - at - 8));
  std::string events, first, last;
  line >> events >> first >> last;
  EXPECT_EQ(events, "2");
  EXPECT_EQ(first, "3.000");
  EXPECT_EQ(last, "10.000");
}

TEST_F(TraceCli, SummarisesChakraByWorkloadNameOrRankFile) {
  write("run.et");
  for (const char* name : {"run.et", "run.0.et"}) {
    const Result r = run_cli({"trace", (dir_ / name).string()});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_NE(r.out.find("chakra trace: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rank 0   COMP_NODE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("COMM_COLL_NODE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("total: 2 events on 2 tracks, 3.000 us .. 10.000 us"), std::string::npos) << r.out;
  }
}

TEST_F(TraceCli, SummarisesTheKernelCsv) {
  const Result r = run_cli({"trace", write("k.csv")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("csv trace: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 1 events on 1 tracks, 3.000 us .. 7.000 us"), std::string::npos) << r.out;
}

TEST_F(TraceCli, BadFilesAreErrorsNamingThemWithExitTwo) {
  { std::ofstream(dir_ / "bad.json") << "{\"traceEvents\": [1, 2"; }
  { std::ofstream(dir_ / "bad.pftrace") << "not protobuf"; }
  for (const char* name : {"bad.json", "bad.pftrace", "missing.pftrace", "missing.et", "notes.txt"}) {
    const std::string path = (dir_ / name).string();
    const Result r = run_cli({"trace", path});
    EXPECT_EQ(r.code, kExitBadInput) << name << "\n" << r.out;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  }
  EXPECT_EQ(run_cli({"trace"}).code, kExitBadInput);
}

}  // namespace
