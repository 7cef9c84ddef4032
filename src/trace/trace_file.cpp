// summarize_trace_file: the reader for a file's format (one file per format beside this one,
// as the writers are), and the summary's text.

#include "syntorch/trace/trace_file.hpp"

#include <fmt/format.h>

#include "syntorch/trace/open_trace_writer.hpp"
#include "trace_reader.hpp"

namespace syntorch::trace {

namespace fs = std::filesystem;
using detail::read_chakra;
using detail::read_chrome;
using detail::read_csv;
using detail::read_perfetto;

namespace {

std::string us_text(TimePs ps) {
  const TimePs ns = (ps + 500) / 1000;
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace

TraceFileSummary summarize_trace_file(const fs::path& path) {
  // The writers' own table of formats by extension.
  if (const auto format = trace_format_from_path(path)) {
    switch (*format) {
      case TraceFormat::kChrome: return read_chrome(path);
      case TraceFormat::kPerfetto: return read_perfetto(path);
      case TraceFormat::kChakra: return read_chakra(path);
      case TraceFormat::kCsv: return read_csv(path);
    }
  }
  throw TraceFileError(
      fmt::format("cannot tell the trace format of '{}' from its name (valid: {})", path.string(), valid_trace_formats()));
}

std::string format_trace_summary(const TraceFileSummary& s) {
  fmt::memory_buffer b;
  std::string files;
  for (const fs::path& f : s.files) files += (files.empty() ? "" : ", ") + f.string();
  fmt::format_to(fmt::appender(b), "{} trace: {}\n", s.format, files);
  std::size_t pw = 7, tw = 5;
  for (const TrackSummary& t : s.tracks) {
    pw = std::max(pw, t.process.size());
    tw = std::max(tw, t.track.size());
  }
  fmt::format_to(fmt::appender(b), "  {:<{}}  {:<{}}  {:>10}  {:>16}  {:>16}\n", "process", pw, "track", tw, "events",
                 "first (us)", "last (us)");
  for (const TrackSummary& t : s.tracks) {
    fmt::format_to(fmt::appender(b), "  {:<{}}  {:<{}}  {:>10}  {:>16}  {:>16}\n", t.process, pw, t.track, tw, t.events,
                   t.events == 0 ? "-" : us_text(t.first_ps), t.events == 0 ? "-" : us_text(t.last_ps));
  }
  fmt::format_to(fmt::appender(b), "total: {} events on {} tracks", s.events, s.tracks.size());
  if (s.events > 0) {
    fmt::format_to(fmt::appender(b), ", {} us .. {} us (span {} us)", us_text(s.first_ps), us_text(s.last_ps),
                   us_text(s.last_ps - s.first_ps));
  }
  if (s.flow_endpoints > 0) fmt::format_to(fmt::appender(b), ", {} flow endpoints", s.flow_endpoints);
  b.push_back('\n');
  return fmt::to_string(b);
}

}  // namespace syntorch::trace