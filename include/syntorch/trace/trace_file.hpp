#pragma once
// Reading back the trace files syntorch writes, for `syntorch trace FILE`: per track the number
// of events and the first and last times, and the whole trace's span. Every reader streams (a
// SAX parser for JSON, one packet or message at a time for protobuf, one row at a time for
// CSV), so a file of any size summarises in flat memory.
//
//   format    files                       a "track" is                     an event is
//   chrome    .json, .json.gz             a (pid, tid) thread, or a        a complete/begin/instant/
//                                         counter name in a pid            counter event (not "E")
//   perfetto  .pftrace                    a TrackDescriptor                SLICE_BEGIN, INSTANT, COUNTER
//   chakra    .et: one rank file, or the  a node type within a rank        a Node
//             prefix of "<p>.<rank>.et"
//   csv       .csv (CsvWriter's columns)  a (rank, track) pair             a row
// Flow endpoints are counted apart (Chrome "s"/"t"/"f" events, Perfetto flow ids on events).

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "syntorch/trace/event.hpp"

namespace syntorch::trace {

// A file that cannot be read, or is not a trace of the format its name says; what() names it.
class TraceFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One track of a trace file: who it belongs to, how many events it holds and when.
struct TrackSummary {
  std::string process;  // the process's name, or "pid N" when it has none
  std::string track;    // the thread's or counter's name ("tid N" when it has none)
  std::uint64_t events = 0;
  TimePs first_ps = 0;  // earliest event time
  TimePs last_ps = 0;   // latest event time (slice ends included)
};

// A whole trace file (or a Chakra workload's rank files): its tracks and the totals.
struct TraceFileSummary {
  std::string format;                      // "chrome", "perfetto", "chakra" or "csv"
  std::vector<std::filesystem::path> files;  // the files read (several for a Chakra prefix)
  std::vector<TrackSummary> tracks;        // in order of first appearance in the file
  std::uint64_t events = 0;                // summed over the tracks
  std::uint64_t flow_endpoints = 0;
  TimePs first_ps = 0;  // over every event; both 0 when there are none
  TimePs last_ps = 0;
};

// Reads `path` by its extension (.json, .json.gz, .pftrace, .et, .csv). Throws TraceFileError
// naming the file for an unknown extension, a missing or unreadable file, or malformed content.
TraceFileSummary summarize_trace_file(const std::filesystem::path& path);

// The summary as an aligned table: a header line, one line per track, then the totals.
std::string format_trace_summary(const TraceFileSummary& summary);

}  // namespace syntorch::trace
