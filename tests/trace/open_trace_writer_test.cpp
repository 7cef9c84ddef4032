#include "syntorch/trace/open_trace_writer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "syntorch/trace/chakra_writer.hpp"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/csv_writer.hpp"
#include "syntorch/trace/perfetto_writer.hpp"
#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

using testing::ScratchDir;
using testing::SimLikeTrace;

TEST(OpenTraceWriter, ChoosesTheWriterByExtension) {
  ScratchDir dir;
  EXPECT_NE(dynamic_cast<ChromeJsonWriter*>(open_trace_writer(dir / "a.json").get()), nullptr);
  EXPECT_NE(dynamic_cast<ChromeJsonWriter*>(open_trace_writer(dir / "a.json.gz").get()), nullptr);
  EXPECT_NE(dynamic_cast<PerfettoWriter*>(open_trace_writer(dir / "a.pftrace").get()), nullptr);
  EXPECT_NE(dynamic_cast<ChakraWriter*>(open_trace_writer(dir / "a.et").get()), nullptr);
  EXPECT_NE(dynamic_cast<CsvWriter*>(open_trace_writer(dir / "a.csv").get()), nullptr);
  EXPECT_EQ(dir.listing(), "");  // none was finished
}

TEST(OpenTraceWriter, AFormatNameOverridesTheExtension) {
  ScratchDir dir;
  EXPECT_NE(dynamic_cast<PerfettoWriter*>(open_trace_writer(dir / "a.trace", "perfetto").get()), nullptr);
  EXPECT_NE(dynamic_cast<ChromeJsonWriter*>(open_trace_writer(dir / "a.pftrace", "chrome").get()), nullptr);
  EXPECT_NE(dynamic_cast<ChakraWriter*>(open_trace_writer(dir / "workload", "chakra").get()), nullptr);
  EXPECT_NE(dynamic_cast<CsvWriter*>(open_trace_writer(dir / "kernels.txt", "csv").get()), nullptr);
}

TEST(OpenTraceWriter, UnknownExtensionsAndFormatsListTheValidOnes) {
  for (const auto& [path, format] : std::vector<std::pair<std::string, std::optional<std::string>>>{
           {"trace.txt", std::nullopt}, {"trace", std::nullopt}, {".json", std::nullopt}, {"a.json", "protobuf"}}) {
    try {
      open_trace_writer(path, format);
      FAIL() << path;
    } catch (const UnknownTraceFormat& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(format ? *format : path), std::string::npos) << what;
      for (const char* valid : {"chrome", ".json.gz", "perfetto", ".pftrace", "chakra", ".et", "csv"}) {
        EXPECT_NE(what.find(valid), std::string::npos) << what;
      }
    }
  }
  EXPECT_THROW(open_trace_writer("x.txt"), std::invalid_argument);  // UnknownTraceFormat is one
}

TEST(OpenTraceWriter, FormatNamesRoundTrip) {
  for (const TraceFormat f : {TraceFormat::kChrome, TraceFormat::kPerfetto, TraceFormat::kChakra, TraceFormat::kCsv}) {
    EXPECT_EQ(trace_format_from_name(trace_format_name(f)), f);
  }
  EXPECT_EQ(trace_format_from_path("dir.json/x.json.gz"), TraceFormat::kChrome);
  EXPECT_EQ(trace_format_from_path("x.gz"), std::nullopt);
  EXPECT_EQ(trace_format_from_name("Chrome"), std::nullopt);
}

TEST(OpenTraceWriter, EveryFormatWritesTheSimulatorsTrace) {
  ScratchDir dir;
  for (const char* name : {"t.json", "t.json.gz", "t.pftrace", "t.et", "t.csv"}) {
    Recorder rec;
    rec.attach(open_trace_writer(dir / name));
    SimLikeTrace sample;
    sample.write(rec);
    rec.finish();
  }
  EXPECT_EQ(dir.listing(), "t.0.et t.1.et t.comm_groups.json t.csv t.json t.json.gz t.pftrace");
}

}  // namespace
}  // namespace syntorch::trace
