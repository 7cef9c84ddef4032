#pragma once
// A Sink that writes one CSV row per kernel (spans of category "kernel"), for spreadsheets and
// pandas: the header
//   rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound
// then, per kernel, its process id (the rank), its track's name, its name, the args "op", "impl",
// "tile", "flops", "hbm_bytes" and "bound" (empty when absent), and its start and duration in
// microseconds, exact from the picoseconds ("1.234567"). Fields holding a comma, a quote or a
// line break are quoted, quotes doubled (RFC 4180); lines end with "\n". Other events are
// ignored. Streaming: each row is formatted into a reused buffer and written at once.
//
// Written to a path, the file is an OutputFile ("<path>.partial" until finish()).

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

class CsvWriter final : public Sink {
 public:
  static constexpr std::string_view kHeader =
      "rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound";

  // Writes to `out`, which must outlive the writer (or at least its finish()).
  explicit CsvWriter(std::ostream& out);
  // Writes "<path>.partial", renamed to `path` by finish(); throws std::runtime_error naming
  // the path when it cannot be created.
  explicit CsvWriter(const std::filesystem::path& path);
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;
  // Without finish(): a file writer removes its partial file.
  ~CsvWriter() override;

  void begin() override;
  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  // Flushes (and commits the file); throws std::runtime_error on a write error.
  void finish() override;

  std::uint64_t rows_written() const noexcept { return rows_; }

 private:
  struct TrackText {
    bool declared = false;
    std::string prefix;  // "rank,track," with the track name quoted as needed
  };

  void write_header();
  void write_buffer();

  std::unique_ptr<OutputFile> file_;
  std::ostream* out_ = nullptr;
  fmt::memory_buffer buf_;
  std::vector<TrackText> tracks_;
  std::uint64_t rows_ = 0;
  bool header_written_ = false;
  bool finished_ = false;
};

}  // namespace syntorch::trace
