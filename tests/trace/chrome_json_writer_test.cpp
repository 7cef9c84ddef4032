#include "syntorch/trace/chrome_json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "syntorch/trace/recorder.hpp"

namespace syntorch::trace {
namespace {

using nlohmann::json;

// Converts a parsed microsecond time back to picoseconds (exact for the magnitudes used here).
std::int64_t ps_of(const json& us) { return std::llround(us.get<double>() * 1e6); }

// Two ranks; rank 0 has an op track with a nested op, two kernel streams, a memory counter and a
// flow from the op to its kernel; rank 1 has a single op.
struct SampleTrace {
  TrackId ops0, stream7, stream8, hbm0, ops1;
  std::uint64_t flow_id = 0;

  void write(Recorder& rec) {
    rec.add_process(0, "rank 0");
    rec.add_process(1, "rank 1");
    ops0 = rec.add_thread_track(0, 1, "torch ops");
    stream7 = rec.add_thread_track(0, 7, "stream 7");
    stream8 = rec.add_thread_track(0, 8, "stream 8");
    hbm0 = rec.add_counter_track(0, "HBM allocated", "bytes");
    ops1 = rec.add_thread_track(1, 1, "torch ops");

    rec.instant(ops0, "alloc", "memory", 1'100'000, {{"bytes", std::uint64_t{4096}}, {"pool", "large"}});
    rec.counter(hbm0, 1'100'000, 4096);
    flow_id = rec.next_flow_id();
    rec.flow_begin(flow_id, ops0, 1'500'000);
    rec.span(ops0, "aten::matmul", "op", 1'234'567, 4'000'000, {{"m", 128}, {"n", 256}});
    rec.flow_end(flow_id, stream7, 2'000'000);
    rec.span(stream7, "gemm_128x128", "kernel", 2'000'000, 3'500'000,
             {{"flops", std::uint64_t{8'388'608}}, {"efficiency", 0.75}, {"split_k", false}, {"delta", -3}});
    rec.span(stream8, "nccl_all_reduce", "kernel", 2'500'000, 4'500'000);
    rec.span(ops0, "aten::linear", "op", 1'000'000, 5'234'567);
    rec.counter(hbm0, 5'000'000, 1024.5);
    rec.span(ops1, "aten::linear", "op", 0, 3'000'001);
  }
};

std::string sample_text() {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  SampleTrace sample;
  sample.write(rec);
  rec.finish();
  return out.str();
}

std::vector<json> events_where(const json& doc, const std::string& ph) {
  std::vector<json> found;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph) found.push_back(e);
  }
  return found;
}

json find_event(const json& doc, const std::string& ph, const std::string& name, int pid) {
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph && e.at("name") == name && e.at("pid") == pid) return e;
  }
  ADD_FAILURE() << "no " << ph << " event named " << name << " in pid " << pid;
  return json::object();
}

TEST(ChromeJsonWriter, OutputIsATraceEventObjectWithNanosecondDisplayUnit) {
  const json doc = json::parse(sample_text());
  ASSERT_TRUE(doc.is_object());
  EXPECT_TRUE(doc.at("traceEvents").is_array());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  // 2 processes x 2 metadata + 4 thread tracks x 2 metadata + 1 instant + 2 counters + 2 flows + 5 spans
  EXPECT_EQ(doc.at("traceEvents").size(), 4u + 8u + 1u + 2u + 2u + 5u);
}

TEST(ChromeJsonWriter, NestedSpansParseBackInWholeNanoseconds) {
  const std::string text = sample_text();
  const json doc = json::parse(text);
  const json parent = find_event(doc, "X", "aten::linear", 0);
  const json child = find_event(doc, "X", "aten::matmul", 0);
  // Begin and end are each taken down to their nanosecond (1'234'567 ps -> 1'234 ns).
  EXPECT_EQ(ps_of(child.at("ts")), 1'234'000);
  EXPECT_EQ(ps_of(child.at("dur")), 4'000'000 - 1'234'000);
  EXPECT_EQ(ps_of(parent.at("ts")), 1'000'000);
  EXPECT_EQ(ps_of(parent.at("dur")), 4'234'000);
  // The child lies within the parent on the same pid/tid.
  EXPECT_EQ(child.at("tid"), parent.at("tid"));
  EXPECT_GE(ps_of(child.at("ts")), ps_of(parent.at("ts")));
  EXPECT_LE(ps_of(child.at("ts")) + ps_of(child.at("dur")), ps_of(parent.at("ts")) + ps_of(parent.at("dur")));
  // The text itself holds exact decimal microseconds of whole nanoseconds.
  EXPECT_NE(text.find("\"ts\":1.234,\"dur\":2.766"), std::string::npos);
  EXPECT_NE(text.find("\"ts\":1,\"dur\":4.234"), std::string::npos);
  const std::size_t whole = text.find("\"ts\":0,\"dur\":3");
  ASSERT_NE(whole, std::string::npos);
  EXPECT_NE(text[whole + 14], '.');  // 3'000'001 ps ends in its nanosecond 3'000
}

TEST(ChromeJsonWriter, BackToBackSpansWithPicosecondFractionsDoNotOverlap) {
  std::stringstream out;
  Recorder rec;
  ChromeJsonWriter writer(out);
  rec.attach(writer);
  rec.add_process(1, "p");
  const TrackId t = rec.add_thread_track(1, 1, "stream 0");
  rec.span(t, "a", "kernel", 1'500, 2'700);
  rec.span(t, "b", "kernel", 2'700, 3'900);
  rec.finish();
  const json doc = json::parse(out.str());
  const json a = find_event(doc, "X", "a", 1);
  const json b = find_event(doc, "X", "b", 1);
  // Nanoseconds 1..2 and 2..3: a ends exactly where b begins, as trace_processor reads them.
  EXPECT_EQ(ps_of(a.at("ts")) + ps_of(a.at("dur")), ps_of(b.at("ts")));
  EXPECT_EQ(ps_of(b.at("ts")), 2'000);
}

TEST(ChromeJsonWriter, TimesAreWholeNanosecondsInExactDecimalMicrosecondsWithTrailingZerosTrimmed) {
  const std::vector<std::pair<TimePs, std::string>> cases{
      {0, "0"},
      {1, "0"},
      {999'999, "0.999"},
      {1'000'000, "1"},
      {1'500'000, "1.5"},
      {1'234'000, "1.234"},
      {12'345'678'901'234'567, "12345678901.234"},  // beyond a double's 15-16 significant digits
      {std::numeric_limits<TimePs>::max(), "18446744073709.551"},
  };
  for (const auto& [ps, want] : cases) {
    std::stringstream out;
    Recorder rec;
    ChromeJsonWriter writer(out);
    rec.attach(writer);
    rec.add_process(0, "p");
    const TrackId t = rec.add_thread_track(0, 0, "t");
    rec.instant(t, "i", "c", ps);
    rec.finish();
    EXPECT_NE(out.str().find("\"ts\":" + want + "}"), std::string::npos) << ps << " ps in:\n" << out.str();
    EXPECT_TRUE(json::accept(out.str()));
  }
}

TEST(ChromeJsonWriter, MetadataNamesAndOrdersProcessesAndThreads) {
  const json doc = json::parse(sample_text());
  std::vector<std::string> process_names, thread_names;
  for (const json& m : events_where(doc, "M")) {
    if (m.at("name") == "process_name") {
      process_names.push_back(fmt::format("{}:{}", m.at("pid").get<int>(), m.at("args").at("name").get<std::string>()));
    } else if (m.at("name") == "thread_name") {
      thread_names.push_back(fmt::format("{}/{}:{}", m.at("pid").get<int>(), m.at("tid").get<int>(),
                                         m.at("args").at("name").get<std::string>()));
    } else if (m.at("name") == "process_sort_index") {
      EXPECT_EQ(m.at("args").at("sort_index"), m.at("pid"));  // defaults to the pid
    } else if (m.at("name") == "thread_sort_index") {
      EXPECT_TRUE(m.at("args").at("sort_index").is_number_integer());
    } else {
      ADD_FAILURE() << "unexpected metadata " << m.dump();
    }
  }
  EXPECT_EQ(process_names, (std::vector<std::string>{"0:rank 0", "1:rank 1"}));
  EXPECT_EQ(thread_names,
            (std::vector<std::string>{"0/1:torch ops", "0/7:stream 7", "0/8:stream 8", "1/1:torch ops"}));
}

TEST(ChromeJsonWriter, SpansCarryPidTidCategoryAndTypedArgs) {
  const json doc = json::parse(sample_text());
  const json k = find_event(doc, "X", "gemm_128x128", 0);
  EXPECT_EQ(k.at("cat"), "kernel");
  EXPECT_EQ(k.at("pid"), 0);
  EXPECT_EQ(k.at("tid"), 7);
  EXPECT_EQ(k.at("args").at("flops"), 8'388'608u);
  EXPECT_EQ(k.at("args").at("efficiency"), 0.75);
  EXPECT_EQ(k.at("args").at("split_k"), false);
  EXPECT_EQ(k.at("args").at("delta"), -3);
  const json r1 = find_event(doc, "X", "aten::linear", 1);
  EXPECT_EQ(r1.at("tid"), 1);
  EXPECT_FALSE(r1.contains("args"));  // no args, no field
}

TEST(ChromeJsonWriter, InstantsAreThreadScoped) {
  const json doc = json::parse(sample_text());
  const json i = find_event(doc, "i", "alloc", 0);
  EXPECT_EQ(i.at("s"), "t");
  EXPECT_EQ(i.at("tid"), 1);
  EXPECT_EQ(ps_of(i.at("ts")), 1'100'000);
  EXPECT_EQ(i.at("args").at("bytes"), 4096);
  EXPECT_EQ(i.at("args").at("pool"), "large");
}

TEST(ChromeJsonWriter, CounterSamplesCarryTheirValueUnderTheUnitSeries) {
  const json doc = json::parse(sample_text());
  const std::vector<json> counters = events_where(doc, "C");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].at("name"), "HBM allocated");
  EXPECT_EQ(counters[0].at("pid"), 0);
  EXPECT_EQ(ps_of(counters[0].at("ts")), 1'100'000);
  EXPECT_EQ(counters[0].at("args"), json({{"bytes", 4096}}));
  EXPECT_EQ(ps_of(counters[1].at("ts")), 5'000'000);
  EXPECT_EQ(counters[1].at("args").at("bytes"), 1024.5);
}

TEST(ChromeJsonWriter, CounterWithoutUnitUsesTheValueSeries) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId c = rec.add_counter_track(0, "SM occupancy");
  rec.counter(c, 0, 0.5);
  rec.finish();
  const json doc = json::parse(out.str());
  EXPECT_EQ(events_where(doc, "C").at(0).at("args"), json({{"value", 0.5}}));
}

TEST(ChromeJsonWriter, FlowEndpointsShareAnIdAndTheEndBindsToItsEnclosingSlice) {
  const json doc = json::parse(sample_text());
  const std::vector<json> starts = events_where(doc, "s");
  const std::vector<json> ends = events_where(doc, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(starts[0].at("id"), ends[0].at("id"));
  EXPECT_EQ(starts[0].at("id"), 1);
  EXPECT_EQ(ends[0].at("bp"), "e");
  EXPECT_FALSE(starts[0].contains("bp"));
  EXPECT_EQ(starts[0].at("cat"), ends[0].at("cat"));
  EXPECT_EQ(starts[0].at("name"), ends[0].at("name"));
  // The start lies inside the op (tid 1), the end inside the kernel (tid 7).
  const json op = find_event(doc, "X", "aten::matmul", 0);
  const json kernel = find_event(doc, "X", "gemm_128x128", 0);
  EXPECT_EQ(starts[0].at("tid"), op.at("tid"));
  EXPECT_EQ(ends[0].at("tid"), kernel.at("tid"));
  EXPECT_GE(ps_of(starts[0].at("ts")), ps_of(op.at("ts")));
  EXPECT_LE(ps_of(starts[0].at("ts")), ps_of(op.at("ts")) + ps_of(op.at("dur")));
  EXPECT_GE(ps_of(ends[0].at("ts")), ps_of(kernel.at("ts")));
  EXPECT_LE(ps_of(ends[0].at("ts")), ps_of(kernel.at("ts")) + ps_of(kernel.at("dur")));
}

TEST(ChromeJsonWriter, FlowStepsUseTheStepPhase) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const std::uint64_t id = rec.next_flow_id();
  rec.flow_begin(id, t, 1);
  rec.flow_step(id, t, 2);
  rec.flow_end(id, t, 3);
  rec.finish();
  const json doc = json::parse(out.str());
  ASSERT_EQ(events_where(doc, "t").size(), 1u);
  EXPECT_EQ(events_where(doc, "t")[0].at("id"), id);
}

TEST(ChromeJsonWriter, StringEscapingRoundTrips) {
  const std::vector<std::string> nasty{
      "quote \" and backslash \\ and slash /",
      "newline\n tab\t cr\r backspace\b formfeed\f",
      std::string("nul \0 and \x01 and \x1f and del \x7f", 27),
      "utf-8: \xC2\xB5s, \xE2\x86\x92, \xF0\x9F\x9A\x80",
      "{\"looks\":[\"like json\"]}",
      "",
  };
  for (const std::string& s : nasty) {
    std::stringstream out;
    ChromeJsonWriter writer(out);
    Recorder rec;
    rec.attach(writer);
    rec.add_process(0, s);
    const TrackId t = rec.add_thread_track(0, 0, s);
    const TrackId c = rec.add_counter_track(0, s, s);
    rec.span(t, s, s, 0, 1, {{s, s}});
    rec.counter(c, 0, 1);
    rec.finish();
    json doc;
    ASSERT_NO_THROW(doc = json::parse(out.str())) << out.str();
    EXPECT_EQ(events_where(doc, "M")[0].at("args").at("name"), s);  // process name
    EXPECT_EQ(events_where(doc, "M")[2].at("args").at("name"), s);  // thread name
    const json x = events_where(doc, "X").at(0);
    EXPECT_EQ(x.at("name"), s);
    EXPECT_EQ(x.at("cat"), s);
    EXPECT_EQ(x.at("args").at(s), s);
    const json cs = events_where(doc, "C").at(0);
    EXPECT_EQ(cs.at("name"), s);
    EXPECT_EQ(cs.at("args").at(s.empty() ? std::string("value") : s), 1);
  }
}

TEST(ChromeJsonWriter, InvalidUtf8BytesBecomeReplacementCharacters) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  // A lone continuation byte, a truncated 2-byte sequence, an overlong '/', a surrogate half.
  rec.instant(t, "a\x80" "b\xC3" "c\xC0\xAF" "d\xED\xA0\x80" "e", "c", 0);
  rec.finish();
  json doc;
  ASSERT_NO_THROW(doc = json::parse(out.str())) << out.str();
  EXPECT_EQ(events_where(doc, "i").at(0).at("name"),
            "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "e");
}

TEST(ChromeJsonWriter, NonFiniteDoublesAreWrittenAsNull) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const TrackId c = rec.add_counter_track(0, "c");
  rec.instant(t, "i", "c", 0,
              {{"nan", std::nan("")},
               {"inf", std::numeric_limits<double>::infinity()},
               {"tiny", 1e-300},
               {"third", 1.0 / 3.0}});
  rec.counter(c, 0, -std::numeric_limits<double>::infinity());
  rec.finish();
  json doc;
  ASSERT_NO_THROW(doc = json::parse(out.str())) << out.str();
  const json args = events_where(doc, "i").at(0).at("args");
  EXPECT_TRUE(args.at("nan").is_null());
  EXPECT_TRUE(args.at("inf").is_null());
  EXPECT_EQ(args.at("tiny").get<double>(), 1e-300);         // shortest round-trip form
  EXPECT_EQ(args.at("third").get<double>(), 1.0 / 3.0);
  EXPECT_TRUE(events_where(doc, "C").at(0).at("args").at("value").is_null());
}

TEST(ChromeJsonWriter, IdenticalRunsGiveIdenticalBytes) {
  const std::string a = sample_text();
  const std::string b = sample_text();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

class ChromeJsonFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            fmt::format("syntorch_trace_{}_{}.json", info->name(), static_cast<long>(::getpid()));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path path_;
};

TEST_F(ChromeJsonFile, FileHoldsTheSameBytesAsAStream) {
  {
    Recorder rec;
    rec.attach(ChromeJsonWriter::open(path_));
    SampleTrace sample;
    sample.write(rec);
    rec.finish();
  }
  const std::string text = read(path_);
  EXPECT_EQ(text, sample_text());
  EXPECT_TRUE(json::accept(text));
}

TEST_F(ChromeJsonFile, AWriterDestroyedWithoutFinishLeavesNoFile) {
  const std::filesystem::path partial = path_.string() + ".partial";
  {
    ChromeJsonWriter writer(path_);
    Recorder rec;
    rec.attach(writer);
    SampleTrace sample;
    sample.write(rec);
    EXPECT_TRUE(std::filesystem::exists(partial));
    EXPECT_FALSE(std::filesystem::exists(path_));
  }
  EXPECT_FALSE(std::filesystem::exists(partial));
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST(ChromeJsonWriter, AStreamWriterDestroyedWithoutFinishClosesTheDocument) {
  std::stringstream out;
  {
    ChromeJsonWriter writer(out);
    Recorder rec;
    rec.attach(writer);
    SampleTrace sample;
    sample.write(rec);
  }
  EXPECT_TRUE(json::accept(out.str()));
}

TEST(ChromeJsonWriter, OpeningAnUnwritablePathThrowsNamingIt) {
  const std::filesystem::path bad = "/nonexistent-dir-for-syntorch/trace.json";
  try {
    ChromeJsonWriter writer(bad);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

TEST(ChromeJsonWriter, EmptyTraceIsValidJson) {
  std::stringstream out;
  {
    ChromeJsonWriter writer(out);
    writer.begin();
    writer.finish();
  }
  const json doc = json::parse(out.str());
  EXPECT_TRUE(doc.at("traceEvents").empty());
}

TEST(ChromeJsonWriter, WritesEachEventToTheStreamAsItArrives) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 0, "t");
  const std::size_t before = out.str().size();
  rec.span(t, "first_span", "c", 0, 1);
  EXPECT_GT(out.str().size(), before);
  EXPECT_NE(out.str().find("first_span"), std::string::npos);
  EXPECT_EQ(writer.events_written(), 5u);
  rec.finish();
}

TEST(ChromeJsonWriter, StreamWriteErrorsSurfaceAtFinish) {
  std::stringstream out;
  ChromeJsonWriter writer(out);
  writer.begin();
  out.setstate(std::ios::badbit);
  EXPECT_THROW(writer.finish(), std::runtime_error);
}

}  // namespace
}  // namespace syntorch::trace
