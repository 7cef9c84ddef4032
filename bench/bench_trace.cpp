// Throughput of the trace layer: spans (and other events) per second through the Recorder into
// the Chrome JSON writer, the Perfetto protobuf writer, the CSV and Chakra writers, the console
// summary, and with no sink attached; and the size of the same events in Chrome JSON and in
// Perfetto protobuf (BM_SizeOfTheSameEvents: bytes per event of each, and their ratio).

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include <filesystem>

#include <unistd.h>

#include "syntorch/trace/chakra_writer.hpp"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/csv_writer.hpp"
#include "syntorch/trace/perfetto_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace {

using namespace syntorch::trace;

// A streambuf that discards everything (counting bytes), so the benchmark measures formatting.
class NullBuffer : public std::streambuf {
 public:
  std::uint64_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<std::uint64_t>(n);
    return n;
  }
  int_type overflow(int_type c) override {
    ++bytes;
    return traits_type::not_eof(c);
  }
};

// A streambuf that appends into a string, emptied whenever it passes 4 MiB (a reused buffer).
class StringBuffer : public std::streambuf {
 public:
  std::uint64_t bytes = 0;
  StringBuffer() { text_.reserve(kLimit + 4096); }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (text_.size() > kLimit) text_.clear();
    text_.append(s, static_cast<std::size_t>(n));
    bytes += static_cast<std::uint64_t>(n);
    return n;
  }
  int_type overflow(int_type c) override {
    text_.push_back(static_cast<char>(c));
    ++bytes;
    return traits_type::not_eof(c);
  }

 private:
  static constexpr std::size_t kLimit = 4u << 20;
  std::string text_;
};

constexpr std::array<std::string_view, 4> kNames{"aten::linear", "aten::matmul", "gemm_128x128x64_sm90", "softmax"};

struct Tracks {
  TrackId ops, stream, hbm;
  explicit Tracks(Recorder& rec) {
    rec.add_process(0, "rank 0");
    ops = rec.add_thread_track(0, 1, "torch ops");
    stream = rec.add_thread_track(0, 7, "stream 7");
    hbm = rec.add_counter_track(0, "HBM allocated", "bytes");
  }
};

// One span; args = 0 or 3 key/value pairs.
void emit_span(Recorder& rec, const Tracks& t, bool with_args, std::size_t i, TimePs& now_ps) {
  const std::string_view name = kNames[i & 3];
  if (with_args) {
    rec.span(t.stream, name, "kernel", now_ps, now_ps + 1'234'567,
             {{"flops", std::uint64_t{1} << 30}, {"efficiency", 0.71}, {"tile", "128x128x64"}});
  } else {
    rec.span(t.stream, name, "kernel", now_ps, now_ps + 1'234'567);
  }
  now_ps += 1'500'001;
}

// Emits one span per iteration; args = 0 or 3 key/value pairs.
void emit_spans(benchmark::State& state, Recorder& rec, const Tracks& t) {
  const bool with_args = state.range(0) != 0;
  TimePs now_ps = 0;
  std::size_t i = 0;
  for (auto _ : state) emit_span(rec, t, with_args, i++, now_ps);
  state.SetItemsProcessed(state.iterations());
}

// A realistic mix: an op span, its kernel span, a flow pair and a counter sample (5 events).
constexpr int kMixedEvents = 5;
void emit_mixed(Recorder& rec, const Tracks& t, TimePs& now_ps) {
  const std::uint64_t id = rec.next_flow_id();
  rec.flow_begin(id, t.ops, now_ps + 10);
  rec.span(t.ops, "aten::matmul", "op", now_ps, now_ps + 5'000'000, {{"m", 4096}, {"n", 4096}});
  rec.flow_end(id, t.stream, now_ps + 6'000'000);
  rec.span(t.stream, "gemm_128x128x64_sm90", "kernel", now_ps + 6'000'000, now_ps + 9'000'000);
  rec.counter(t.hbm, now_ps + 9'000'000, static_cast<double>(now_ps & 0xFFFFF));
  now_ps += 10'000'000;
}

void BM_ChromeJsonSpansToNullStream(benchmark::State& state) {
  NullBuffer buf;
  std::ostream out(&buf);
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_ChromeJsonSpansToNullStream)->Arg(0)->Arg(1)->ArgName("args");

void BM_ChromeJsonSpansToStringBuffer(benchmark::State& state) {
  StringBuffer buf;
  std::ostream out(&buf);
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_ChromeJsonSpansToStringBuffer)->Arg(0)->Arg(1)->ArgName("args");

// A realistic mix per iteration: an op span, its kernel span, a flow pair and a counter sample.
void BM_ChromeJsonMixedEventsToNullStream(benchmark::State& state) {
  NullBuffer buf;
  std::ostream out(&buf);
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  TimePs now_ps = 0;
  for (auto _ : state) emit_mixed(rec, t, now_ps);
  rec.finish();
  state.SetItemsProcessed(state.iterations() * kMixedEvents);
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_ChromeJsonMixedEventsToNullStream);

// The same events into the Perfetto protobuf writer.
void BM_PerfettoSpansToNullStream(benchmark::State& state) {
  NullBuffer buf;
  std::ostream out(&buf);
  PerfettoWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_PerfettoSpansToNullStream)->Arg(0)->Arg(1)->ArgName("args");

void BM_PerfettoSpansToStringBuffer(benchmark::State& state) {
  StringBuffer buf;
  std::ostream out(&buf);
  PerfettoWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_PerfettoSpansToStringBuffer)->Arg(0)->Arg(1)->ArgName("args");

void BM_PerfettoMixedEventsToNullStream(benchmark::State& state) {
  NullBuffer buf;
  std::ostream out(&buf);
  PerfettoWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  TimePs now_ps = 0;
  for (auto _ : state) emit_mixed(rec, t, now_ps);
  rec.finish();
  state.SetItemsProcessed(state.iterations() * kMixedEvents);
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_PerfettoMixedEventsToNullStream);

// Files on disk (under the temp dir), Chrome JSON (plain and gzip) and Perfetto, with args.
void BM_SpansToFile(benchmark::State& state, const char* name) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("syntorch_bench_" + std::to_string(::getpid()) + name);
  std::uint64_t size = 0;
  {
    Recorder rec;
    Sink* sink = nullptr;
    if (std::string_view(name).ends_with(".pftrace")) {
      sink = &rec.attach(std::make_unique<PerfettoWriter>(path));
    } else {
      sink = &rec.attach(ChromeJsonWriter::open(path));
    }
    (void)sink;
    const Tracks t(rec);
    TimePs now_ps = 0;
    std::size_t i = 0;
    for (auto _ : state) emit_span(rec, t, true, i++, now_ps);
    rec.finish();
    size = std::filesystem::file_size(path);
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations());
  state.counters["file_bytes_per_event"] =
      benchmark::Counter(static_cast<double>(size) / static_cast<double>(state.iterations()));
}
BENCHMARK_CAPTURE(BM_SpansToFile, json, ".json");
BENCHMARK_CAPTURE(BM_SpansToFile, json_gz, ".json.gz");
BENCHMARK_CAPTURE(BM_SpansToFile, pftrace, ".pftrace");

// Kernel rows into the CSV writer, and device spans into the Chakra writer (one rank file).
void BM_CsvKernelSpansToNullStream(benchmark::State& state) {
  NullBuffer buf;
  std::ostream out(&buf);
  CsvWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_CsvKernelSpansToNullStream)->Arg(1)->ArgName("args");

void BM_ChakraKernelSpansToFile(benchmark::State& state) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("syntorch_bench_" + std::to_string(::getpid()) + ".et");
  {
    Recorder rec;
    rec.attach(std::make_unique<ChakraWriter>(path));
    const Tracks t(rec);
    emit_spans(state, rec, t);
    rec.finish();
  }
  std::filesystem::remove(ChakraWriter::rank_path(path, 0));
  std::filesystem::remove(ChakraWriter::comm_groups_path(path));
}
BENCHMARK(BM_ChakraKernelSpansToFile)->Arg(1)->ArgName("args");

// The same events written to Chrome JSON and to Perfetto protobuf, in one run: bytes per event
// of each and the Perfetto/JSON size ratio. 0: spans without args, 1: spans with 3 args,
// 2: the mixed events.
void BM_SizeOfTheSameEvents(benchmark::State& state) {
  constexpr int kIterations = 100'000;
  const int workload = static_cast<int>(state.range(0));
  std::uint64_t json_bytes = 0, pftrace_bytes = 0, events = 0;
  for (auto _ : state) {
    NullBuffer json_buf, pftrace_buf;
    std::ostream json_out(&json_buf), pftrace_out(&pftrace_buf);
    ChromeJsonWriter json(json_out);
    PerfettoWriter pftrace(pftrace_out);
    Recorder rec;
    rec.attach(json);
    rec.attach(pftrace);
    const Tracks t(rec);
    TimePs now_ps = 0;
    for (int i = 0; i < kIterations; ++i) {
      if (workload == 2) {
        emit_mixed(rec, t, now_ps);
      } else {
        emit_span(rec, t, workload == 1, static_cast<std::size_t>(i), now_ps);
      }
    }
    rec.finish();
    json_bytes = json_buf.bytes;
    pftrace_bytes = pftrace_buf.bytes;
    events = static_cast<std::uint64_t>(kIterations) * (workload == 2 ? kMixedEvents : 1);
  }
  state.counters["json_bytes_per_event"] = static_cast<double>(json_bytes) / static_cast<double>(events);
  state.counters["pftrace_bytes_per_event"] = static_cast<double>(pftrace_bytes) / static_cast<double>(events);
  state.counters["pftrace_to_json"] = static_cast<double>(pftrace_bytes) / static_cast<double>(json_bytes);
}
BENCHMARK(BM_SizeOfTheSameEvents)->Arg(0)->Arg(1)->Arg(2)->ArgName("workload")->Iterations(1);

void BM_ConsoleSummarySpans(benchmark::State& state) {
  ConsoleSummary summary;
  Recorder rec;
  rec.attach(summary);
  const Tracks t(rec);
  emit_spans(state, rec, t);
  rec.finish();
}
BENCHMARK(BM_ConsoleSummarySpans)->Arg(0)->ArgName("args");

// With no sink attached, emitting must cost next to nothing.
void BM_RecorderWithoutSinks(benchmark::State& state) {
  Recorder rec;
  const Tracks t(rec);
  emit_spans(state, rec, t);
}
BENCHMARK(BM_RecorderWithoutSinks)->Arg(0)->Arg(1)->ArgName("args");

}  // namespace

BENCHMARK_MAIN();
