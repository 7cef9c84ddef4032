#include "syntorch/trace/open_trace_writer.hpp"

#include <fmt/format.h>

#include "syntorch/trace/chakra_writer.hpp"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/csv_writer.hpp"
#include "syntorch/trace/perfetto_writer.hpp"

namespace syntorch::trace {

namespace {
constexpr TraceFormat kFormats[] = {TraceFormat::kChrome, TraceFormat::kPerfetto, TraceFormat::kChakra,
                                    TraceFormat::kCsv};
}  // namespace

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kChrome: return "chrome";
    case TraceFormat::kPerfetto: return "perfetto";
    case TraceFormat::kChakra: return "chakra";
    case TraceFormat::kCsv: return "csv";
  }
  return "?";
}

std::optional<TraceFormat> trace_format_from_name(std::string_view name) {
  for (const TraceFormat f : kFormats) {
    if (trace_format_name(f) == name) return f;
  }
  return std::nullopt;
}

std::optional<TraceFormat> trace_format_from_path(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const auto ends_with = [&name](std::string_view suffix) {
    return name.size() > suffix.size() && std::string_view(name).ends_with(suffix);
  };
  if (ends_with(".json") || ends_with(".json.gz")) return TraceFormat::kChrome;
  if (ends_with(".pftrace")) return TraceFormat::kPerfetto;
  if (ends_with(".et")) return TraceFormat::kChakra;
  if (ends_with(".csv")) return TraceFormat::kCsv;
  return std::nullopt;
}

std::string valid_trace_formats() { return "chrome (.json, .json.gz), perfetto (.pftrace), chakra (.et), csv (.csv)"; }

std::unique_ptr<Sink> open_trace_writer(const std::filesystem::path& path, std::optional<std::string> format) {
  std::optional<TraceFormat> f;
  if (format) {
    f = trace_format_from_name(*format);
    if (!f) {
      throw UnknownTraceFormat(
          fmt::format("unknown trace format \"{}\" (valid: {})", *format, valid_trace_formats()));
    }
  } else {
    f = trace_format_from_path(path);
    if (!f) {
      throw UnknownTraceFormat(fmt::format("cannot tell the trace format of '{}' from its name (valid: {})",
                                           path.string(), valid_trace_formats()));
    }
  }
  switch (*f) {
    case TraceFormat::kChrome: return std::make_unique<ChromeJsonWriter>(path);
    case TraceFormat::kPerfetto: return std::make_unique<PerfettoWriter>(path);
    case TraceFormat::kChakra: return std::make_unique<ChakraWriter>(path);
    case TraceFormat::kCsv: return std::make_unique<CsvWriter>(path);
  }
  throw UnknownTraceFormat("unknown trace format");
}

}  // namespace syntorch::trace
