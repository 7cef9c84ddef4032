#pragma once
// A Sink that streams the Chrome Trace Event Format (what Perfetto and chrome://tracing open):
// {"traceEvents":[ ...one event per line... ],"displayTimeUnit":"ns"}.
//
// Mapping: a process becomes process_name/process_sort_index metadata ("M") events; a thread
// track thread_name/thread_sort_index metadata; a span an "X" complete event; an instant an "i"
// event with thread scope; a counter sample a "C" event named after its counter track with one
// series (keyed by the track's unit, or "value" when it has none); flow endpoints "s"/"t"/"f"
// events with the flow id, the end bound to its enclosing slice ("bp":"e").
// Times are written in microseconds exactly from the integer picoseconds ("1.234567" for
// 1234567 ps; trailing zeros trimmed), never through a double. Doubles use the shortest form that
// round-trips (locale-independent); NaN and infinities are written as null. Strings are escaped
// as JSON requires, and invalid UTF-8 bytes are replaced by U+FFFD.
//
// Each event is formatted into a reused buffer and written out at once, so memory stays flat
// however many events pass, and the same calls give byte-identical output.
//
// Written to a path, the file is an OutputFile: "<path>.partial" until finish() renames it into
// place; a writer destroyed without finish() (a failed run) or hit by a write error leaves no
// file. A path ending in ".gz" is gzip-compressed as it streams (zlib level 1).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "syntorch/trace/output_file.hpp"
#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class ChromeJsonWriter final : public Sink {
 public:
  // Writes to `out`, which must outlive the writer (or at least its finish()). A write that
  // leaves the stream failed throws std::runtime_error at once.
  explicit ChromeJsonWriter(std::ostream& out);
  // Writes "<path>.partial" (gzip when the path ends in ".gz"), renamed to `path` by finish();
  // throws std::runtime_error naming the path and the OS error when it cannot be created.
  explicit ChromeJsonWriter(const std::filesystem::path& path);
  static std::unique_ptr<ChromeJsonWriter> open(const std::filesystem::path& path);

  ChromeJsonWriter(const ChromeJsonWriter&) = delete;
  ChromeJsonWriter& operator=(const ChromeJsonWriter&) = delete;
  // Without finish(): a file writer removes its partial file (the run failed); a stream writer
  // closes the document (errors are swallowed here).
  ~ChromeJsonWriter() override;

  void begin() override;
  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  // Closes the JSON document and flushes (and commits an owned file); throws std::runtime_error
  // when the stream or the file reports a write error. Later calls do nothing.
  void finish() override;

  // Events written so far, metadata included.
  std::uint64_t events_written() const noexcept { return events_written_; }

 private:
  // Preformatted JSON fragments for one track.
  struct TrackText {
    bool declared = false;
    bool is_counter = false;
    std::string location;  // thread: "pid":P,"tid":T   counter: "name":"N","pid":P
    std::string series;    // counter only: the escaped series key, quotes included
  };

  void start_event();  // writes the separator into the buffer
  // A metadata ("M") event at `location` ("pid":P,"tid":T) with one arg: text, or else number.
  void metadata_event(std::string_view name, std::string_view location, std::string_view key,
                      const std::string_view* text, std::int64_t number);
  // Starts a slice-track event: head ("{\"ph\":..,\"name\":"), name, category, pid/tid, ts.
  void open_slice_event(std::string_view head, std::string_view name, std::string_view category, const TrackText& t,
                        TimePs ts_ps);
  void end_event();    // writes the buffer out
  void write_buffer();
  const TrackText& track_text(TrackId id, const char* what) const;
  void append_args(std::span<const Arg> args);

  std::unique_ptr<OutputFile> file_;  // null when writing to a caller's stream
  std::ostream* out_ = nullptr;
  fmt::memory_buffer buf_;
  std::vector<TrackText> tracks_;
  std::uint64_t events_written_ = 0;
  bool begun_ = false;
  bool finished_ = false;
};

}  // namespace syntorch::trace
