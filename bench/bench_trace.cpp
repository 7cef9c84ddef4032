// Throughput of the trace layer: spans (and other events) per second through the Recorder into
// the Chrome JSON writer, the console summary, and with no sink attached.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/console_summary.hpp"
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

// Emits one span per iteration; args = 0 or 3 key/value pairs.
void emit_spans(benchmark::State& state, Recorder& rec, const Tracks& t) {
  const bool with_args = state.range(0) != 0;
  TimePs now_ps = 0;
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string_view name = kNames[i++ & 3];
    if (with_args) {
      rec.span(t.stream, name, "kernel", now_ps, now_ps + 1'234'567,
               {{"flops", std::uint64_t{1} << 30}, {"efficiency", 0.71}, {"tile", "128x128x64"}});
    } else {
      rec.span(t.stream, name, "kernel", now_ps, now_ps + 1'234'567);
    }
    now_ps += 1'500'001;
  }
  state.SetItemsProcessed(state.iterations());
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
  for (auto _ : state) {
    const std::uint64_t id = rec.next_flow_id();
    rec.flow_begin(id, t.ops, now_ps + 10);
    rec.span(t.ops, "aten::matmul", "op", now_ps, now_ps + 5'000'000, {{"m", 4096}, {"n", 4096}});
    rec.flow_end(id, t.stream, now_ps + 6'000'000);
    rec.span(t.stream, "gemm_128x128x64_sm90", "kernel", now_ps + 6'000'000, now_ps + 9'000'000);
    rec.counter(t.hbm, now_ps + 9'000'000, static_cast<double>(now_ps & 0xFFFFF));
    now_ps += 10'000'000;
  }
  rec.finish();
  state.SetItemsProcessed(state.iterations() * 5);
  state.SetBytesProcessed(static_cast<std::int64_t>(buf.bytes));
}
BENCHMARK(BM_ChromeJsonMixedEventsToNullStream);

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
