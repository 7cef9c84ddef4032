// Reading back the kernel CSV one record at a time.

#include <charconv>
#include <optional>

#include "trace_reader.hpp"

namespace syntorch::trace::detail {

namespace fs = std::filesystem;


// Reads one RFC 4180 record into `fields`; false at the end of input.
bool read_record(InputFile& in, std::vector<std::string>& fields) {
  fields.clear();
  int c = in.sbumpc();
  if (c == std::char_traits<char>::eof()) return false;
  std::string field;
  bool quoted = false;
  for (;;) {
    if (quoted) {
      if (c == std::char_traits<char>::eof()) throw TraceFileError("unterminated quoted field");
      if (c == '"') {
        if (in.sgetc() == '"') {
          field.push_back('"');
          in.sbumpc();
        } else {
          quoted = false;
        }
      } else {
        field.push_back(static_cast<char>(c));
      }
    } else if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n' || c == std::char_traits<char>::eof()) {
      if (!field.empty() && field.back() == '\r') field.pop_back();
      fields.push_back(std::move(field));
      return true;
    } else {
      field.push_back(static_cast<char>(c));
    }
    c = in.sbumpc();
  }
}

std::optional<TimePs> parse_us(const std::string& text) {
  double us = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), us);
  if (ec != std::errc() || end != text.data() + text.size() || us < 0) return std::nullopt;
  return ps_of_us(us);
}

TraceFileSummary read_csv(const fs::path& path) {
  InputFile in(path);
  std::vector<std::string> fields;
  std::uint64_t line = 1;
  const auto bad = [&](std::string_view what) {
    return TraceFileError(fmt::format("'{}' is not a syntorch CSV trace: {} (record {})", path.string(), what, line));
  };
  try {
    if (!read_record(in, fields)) throw bad("the file is empty");
  } catch (const TraceFileError& e) {
    throw bad(e.what());
  }
  const auto column = [&](std::string_view name) -> std::size_t {
    const auto it = std::find(fields.begin(), fields.end(), name);
    if (it == fields.end()) throw bad(fmt::format("the header has no \"{}\" column", name));
    return static_cast<std::size_t>(it - fields.begin());
  };
  const std::size_t rank = column("rank"), track = column("track"), start = column("start_us"),
                    duration = column("duration_us");
  const std::size_t columns = fields.size();
  Tally tally;
  for (;;) {
    ++line;
    try {
      if (!read_record(in, fields)) break;
    } catch (const TraceFileError& e) {
      throw bad(e.what());
    }
    if (fields.size() == 1 && fields[0].empty()) continue;  // a blank line
    if (fields.size() != columns) throw bad(fmt::format("{} fields where the header has {}", fields.size(), columns));
    const auto t0 = parse_us(fields[start]);
    const auto dur = parse_us(fields[duration]);
    if (!t0 || !dur) throw bad("start_us or duration_us is not a number of microseconds");
    const std::size_t i = tally.track(fields[rank] + "\n" + fields[track]);
    TrackSummary& t = tally.tracks()[i];
    if (t.track.empty()) {
      t.process = "rank " + fields[rank];
      t.track = fields[track];
    }
    tally.event(i, *t0, *t0 + *dur, true);
  }
  return tally.finish("csv", {path}, 0);
}

// Microseconds with three decimals (nanoseconds), from picoseconds.

}  // namespace syntorch::trace::detail
