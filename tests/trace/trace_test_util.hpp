#pragma once
// Helpers the trace writer tests share: a scratch directory per test, reading files, running
// protoc --decode on what the writers produce, and a trace shaped like the simulator's (ranks with
// a host track, device streams, a memory track and counters; scopes and ops that begin in the
// same nanosecond as their first child; flows from ops to kernels; collectives, p2p and copies).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "syntorch/trace/recorder.hpp"

namespace syntorch::trace::testing {

// A fresh directory under the test temp dir, removed with everything in it at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            fmt::format("syntorch_{}_{}_{}", info->test_suite_name(), info->name(), static_cast<long>(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // The names of the files in the directory, sorted, joined by spaces.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// Runs a shell command and returns its standard output; `status` gets its exit status.
inline std::string run_command(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    status = -1;
    return out;
  }
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = ::pclose(pipe);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// `protoc --decode=<type>` of the file against our schema in src/trace/proto (the text format).
inline std::string protoc_decode(const std::string& type, const std::string& proto, const std::filesystem::path& input) {
  const std::string dir = std::string(SYNTORCH_SOURCE_DIR) + "/src/trace/proto";
  int status = 0;
  const std::string text = run_command(
      fmt::format("protoc --decode={} -I '{}' '{}' < '{}' 2>&1", type, dir, proto, input.string()), status);
  EXPECT_EQ(status, 0) << "protoc --decode=" << type << " failed on " << input << ":\n" << text;
  return text;
}

inline std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

constexpr TimePs kNs = 1'000;
constexpr TimePs kUs = 1'000'000;

// Two ranks shaped like the simulator's trace, in the order the simulator emits (spans at their
// end, flow endpoints just before the span enclosing them).
//   rank r: host "host: torch ops" (tid 0), "stream 0" (tid 1), "memory: alloc/free" (tid 1000),
//           counters "HBM allocated" (bytes) and "SMs in use" (units)
//   host:   scope "layer 0" [1, 20] us holding op "aten::linear" [1, 5] us (begins with the
//           scope) and op "all_reduce" [5, 6] us; flows from each op to its kernel
//   stream: kernel "gemm_128x128" [2, 4.5] us, collective "allreduce" [6, 12] us over group
//           "0,1", p2p send (rank 0) / recv (rank 1) [12, 14] us, memcpy [14, 15.5] us, and on
//           rank 0 a second collective "allgather" over group "0" [16, 17] us
//   memory: an alloc instant at 1 us; counters sampled at 0 and 1 us
struct SimLikeTrace {
  struct Rank {
    TrackId host, stream, memory, allocated, units;
  };
  Rank ranks[2];
  TrackId interconnect_link;

  void declare(Recorder& rec) {
    for (int r = 0; r < 2; ++r) {
      Rank& t = ranks[r];
      const std::int32_t pid = pid_of_rank(r);
      rec.add_process(pid, fmt::format("rank {} (H100)", r));
      t.host = rec.add_thread_track(pid, 0, "host: torch ops");
      t.stream = rec.add_thread_track(pid, 1, "stream 0");
      t.memory = rec.add_thread_track(pid, 1000, "memory: alloc/free");
      t.allocated = rec.add_counter_track(pid, "HBM allocated", "bytes");
      t.units = rec.add_counter_track(pid, "SMs in use", "units");
    }
    rec.add_process(1 << 20, "interconnect");
    interconnect_link = rec.add_counter_track(1 << 20, "nvlink 0->1", "bytes/s");
  }

  void write(Recorder& rec) {
    declare(rec);
    for (int r = 0; r < 2; ++r) {
      const Rank& t = ranks[r];
      rec.counter(t.allocated, 0, 0);
      rec.counter(t.units, 0, 0);
      rec.instant(t.memory, "weights", "alloc", 1 * kUs, {{"bytes", std::uint64_t{4096}}, {"event", "alloc"}});
      rec.counter(t.allocated, 1 * kUs, 4096);

      const std::uint64_t f1 = rec.next_flow_id();
      rec.flow_begin(f1, t.host, 1 * kUs);
      rec.span(t.host, "aten::linear", "op", 1 * kUs, 5 * kUs, {{"shape", "[8, 1024] x [1024, 4096]"}});
      rec.flow_end(f1, t.stream, 2 * kUs);
      rec.span(t.stream, "gemm_128x128", "kernel", 2 * kUs, 4 * kUs + kUs / 2,
               {{"op", "gemm"},
                {"impl", "cutlass"},
                {"tile", "128x128"},
                {"flops", 1.5e9 + 0.4},
                {"hbm_bytes", 2.5e6},
                {"bound", "compute"}});
      rec.counter(t.units, 2 * kUs, 132);

      const std::uint64_t f2 = rec.next_flow_id();
      rec.flow_begin(f2, t.host, 5 * kUs);
      rec.span(t.host, "all_reduce", "op", 5 * kUs, 6 * kUs);
      rec.flow_end(f2, t.stream, 6 * kUs);
      rec.span(t.stream, "allreduce", "collective", 6 * kUs, 12 * kUs,
               {{"comm_type", "allreduce"}, {"comm_bytes", std::uint64_t{1} << 20}, {"group", "0,1"},
                {"algorithm", "ring"}});
      if (r == 0) {
        rec.span(t.stream, "send", "p2p", 12 * kUs, 14 * kUs,
                 {{"src", 0}, {"dst", 1}, {"tag", 7}, {"comm_bytes", std::uint64_t{65536}}});
      } else {
        rec.span(t.stream, "recv", "p2p", 12 * kUs, 14 * kUs,
                 {{"src", 0}, {"dst", 1}, {"tag", 7}, {"comm_bytes", std::uint64_t{65536}}});
      }
      rec.span(t.stream, "memcpy HtoD", "memcpy", 14 * kUs, 15 * kUs + kUs / 2,
               {{"bytes", std::uint64_t{1} << 16}, {"direction", "host to device"}});
      if (r == 0) {
        rec.span(t.stream, "allgather", "collective", 16 * kUs, 17 * kUs,
                 {{"comm_type", "allgather"}, {"comm_bytes", std::uint64_t{4096}}, {"group", "0"}});
      }
      rec.span(t.host, "layer 0", "scope", 1 * kUs, 20 * kUs);
    }
    rec.counter(interconnect_link, 6 * kUs, 4.5e11);
  }
};

}  // namespace syntorch::trace::testing
