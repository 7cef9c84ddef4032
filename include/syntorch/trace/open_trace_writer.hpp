#pragma once
// Choosing a trace writer by file name or format name: the one place that knows every format.
//
//   format     names       extension            writer
//   chrome     "chrome"    .json, .json.gz      ChromeJsonWriter (gzip when the name ends in .gz)
//   perfetto   "perfetto"  .pftrace             PerfettoWriter
//   chakra     "chakra"    .et                  ChakraWriter (one file per rank + comm groups)
//   csv        "csv"       .csv                 CsvWriter (one row per kernel)

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

enum class TraceFormat : std::uint8_t { kChrome, kPerfetto, kChakra, kCsv };

// Thrown for an unknown format name or extension; the message lists the valid ones.
class UnknownTraceFormat : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "chrome", "perfetto", "chakra", "csv".
std::string_view trace_format_name(TraceFormat format);
std::optional<TraceFormat> trace_format_from_name(std::string_view name);
// By the file name's ending: .json, .json.gz, .pftrace, .et, .csv.
std::optional<TraceFormat> trace_format_from_path(const std::filesystem::path& path);
// "chrome (.json, .json.gz), perfetto (.pftrace), chakra (.et), csv (.csv)".
std::string valid_trace_formats();

// The writer for `path`: by `format` when given (a format name), else by the extension.
// Throws UnknownTraceFormat (naming the path or the format and listing the valid ones) when
// neither says, and std::runtime_error when the file cannot be created.
std::unique_ptr<Sink> open_trace_writer(const std::filesystem::path& path,
                                        std::optional<std::string> format = std::nullopt);

}  // namespace syntorch::trace
