#include "syntorch/trace/chrome_json_writer.hpp"

#include <stdexcept>

#include "json_text.hpp"

namespace syntorch::trace {

namespace {
// Chrome JSON times are written in whole nanoseconds: trace_processor rounds "ts" and "dur" to
// nanoseconds one by one, so picosecond fractions in both made back-to-back slices overlap by
// 1 ns. A slice ends at its end time's nanosecond, whatever its begin's fraction.
constexpr TimePs whole_ns(TimePs ps) { return ps / 1000 * 1000; }
}  // namespace

using detail::append_int;
using detail::append_json_double;
using detail::append_json_string;
using detail::append_raw;
using detail::append_uint;
using detail::append_us_from_ps;

namespace {
bool is_gzip_path(const std::filesystem::path& path) { return path.extension() == ".gz"; }
}  // namespace

ChromeJsonWriter::ChromeJsonWriter(std::ostream& out) : out_(&out) {}

ChromeJsonWriter::ChromeJsonWriter(const std::filesystem::path& path) {
  OutputFile::Options options;
  if (is_gzip_path(path)) options.compression = OutputFile::Compression::kGzip;
  file_ = std::make_unique<OutputFile>(path, options);
}

std::unique_ptr<ChromeJsonWriter> ChromeJsonWriter::open(const std::filesystem::path& path) {
  return std::make_unique<ChromeJsonWriter>(path);
}

ChromeJsonWriter::~ChromeJsonWriter() {
  if (file_) return;  // the OutputFile removes its partial file unless finish() committed it
  if (begun_ && !finished_) {
    try {
      finish();
    } catch (...) {  // a destructor must not throw; call finish() to see errors
    }
  }
}

void ChromeJsonWriter::begin() {
  if (begun_) return;
  begun_ = true;
  append_raw(buf_, "{\"traceEvents\":[");
  // The header is written with the first event (or at finish), keeping one write per event.
}

void ChromeJsonWriter::start_event() {
  if (!begun_) [[unlikely]] {
    begin();
  }
  if (finished_) [[unlikely]] {
    throw std::logic_error("trace::ChromeJsonWriter: event after finish()");
  }
  append_raw(buf_, events_written_ == 0 ? "\n" : ",\n");
}

void ChromeJsonWriter::write_buffer() {
  if (file_) {
    file_->write(buf_.data(), buf_.size());
  } else {
    out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    if (out_->fail()) [[unlikely]] {
      throw std::runtime_error("writing the Chrome JSON trace failed: the output stream is in a failed state");
    }
  }
  buf_.clear();
}

void ChromeJsonWriter::end_event() {
  ++events_written_;
  write_buffer();
}

const ChromeJsonWriter::TrackText& ChromeJsonWriter::track_text(TrackId id, const char* what) const {
  if (id.index >= tracks_.size() || !tracks_[id.index].declared) [[unlikely]] {
    throw std::logic_error(
        fmt::format("trace::ChromeJsonWriter: {} on track {}, which was never declared", what, id.index));
  }
  return tracks_[id.index];
}

void ChromeJsonWriter::append_args(std::span<const Arg> args) {
  if (args.empty()) return;
  append_raw(buf_, ",\"args\":{");
  bool first = true;
  for (const Arg& a : args) {
    if (!first) buf_.push_back(',');
    first = false;
    append_json_string(buf_, a.key);
    buf_.push_back(':');
    switch (a.value.type()) {
      case ArgValue::Type::kInt64: append_int(buf_, a.value.as_int64()); break;
      case ArgValue::Type::kUint64: append_uint(buf_, a.value.as_uint64()); break;
      case ArgValue::Type::kDouble: append_json_double(buf_, a.value.as_double()); break;
      case ArgValue::Type::kBool: append_raw(buf_, a.value.as_bool() ? "true" : "false"); break;
      case ArgValue::Type::kString: append_json_string(buf_, a.value.as_string()); break;
    }
  }
  buf_.push_back('}');
}

void ChromeJsonWriter::metadata_event(std::string_view name, std::string_view location, std::string_view key,
                                      const std::string_view* text, std::int64_t number) {
  start_event();
  append_raw(buf_, "{\"ph\":\"M\",\"name\":\"");
  append_raw(buf_, name);
  append_raw(buf_, "\",");
  append_raw(buf_, location);
  append_raw(buf_, ",\"args\":{\"");
  append_raw(buf_, key);
  append_raw(buf_, "\":");
  if (text != nullptr) {
    append_json_string(buf_, *text);
  } else {
    append_int(buf_, number);
  }
  append_raw(buf_, "}}");
  end_event();
}

void ChromeJsonWriter::on_process(const ProcessInfo& process) {
  fmt::memory_buffer location;
  append_raw(location, "\"pid\":");
  append_int(location, process.pid);
  append_raw(location, ",\"tid\":0");
  const std::string_view where(location.data(), location.size());
  const std::string_view name = process.name;
  metadata_event("process_name", where, "name", &name, 0);
  metadata_event("process_sort_index", where, "sort_index", nullptr, process.sort_index);
}

void ChromeJsonWriter::on_track(const TrackInfo& track) {
  if (!track.id.valid()) throw std::logic_error("trace::ChromeJsonWriter: track without an id");
  if (track.id.index >= tracks_.size()) tracks_.resize(track.id.index + 1);
  TrackText& text = tracks_[track.id.index];
  text.declared = true;
  text.is_counter = track.kind == TrackKind::kCounter;

  fmt::memory_buffer tmp;
  if (text.is_counter) {
    append_raw(tmp, "\"name\":");
    append_json_string(tmp, track.name);
    append_raw(tmp, ",\"pid\":");
    append_int(tmp, track.pid);
    text.location = fmt::to_string(tmp);
    tmp.clear();
    append_json_string(tmp, track.unit.empty() ? std::string_view("value") : std::string_view(track.unit));
    text.series = fmt::to_string(tmp);
    return;  // counters need no metadata: the "C" events carry their name
  }
  append_raw(tmp, "\"pid\":");
  append_int(tmp, track.pid);
  append_raw(tmp, ",\"tid\":");
  append_int(tmp, track.tid);
  text.location = fmt::to_string(tmp);

  const std::string_view name = track.name;
  metadata_event("thread_name", text.location, "name", &name, 0);
  metadata_event("thread_sort_index", text.location, "sort_index", nullptr, track.sort_index);
}

void ChromeJsonWriter::open_slice_event(std::string_view head, std::string_view name, std::string_view category,
                                        const TrackText& t, TimePs ts_ps) {
  start_event();
  append_raw(buf_, head);
  append_json_string(buf_, name);
  append_raw(buf_, ",\"cat\":");
  append_json_string(buf_, category);
  buf_.push_back(',');
  append_raw(buf_, t.location);
  append_raw(buf_, ",\"ts\":");
  append_us_from_ps(buf_, whole_ns(ts_ps));
}

void ChromeJsonWriter::on_span(const SpanEvent& span) {
  const TrackText& t = track_text(span.track, "span");
  if (t.is_counter) [[unlikely]] {
    throw std::logic_error("trace::ChromeJsonWriter: span on a counter track");
  }
  open_slice_event("{\"ph\":\"X\",\"name\":", span.name, span.category, t, span.begin_ps);
  append_raw(buf_, ",\"dur\":");
  append_us_from_ps(buf_, span.end_ps >= span.begin_ps ? whole_ns(span.end_ps) - whole_ns(span.begin_ps) : 0);
  append_args(span.args);
  buf_.push_back('}');
  end_event();
}

void ChromeJsonWriter::on_instant(const InstantEvent& instant) {
  const TrackText& t = track_text(instant.track, "instant");
  if (t.is_counter) [[unlikely]] {
    throw std::logic_error("trace::ChromeJsonWriter: instant on a counter track");
  }
  open_slice_event("{\"ph\":\"i\",\"s\":\"t\",\"name\":", instant.name, instant.category, t, instant.ts_ps);
  append_args(instant.args);
  buf_.push_back('}');
  end_event();
}

void ChromeJsonWriter::on_counter(const CounterEvent& counter) {
  const TrackText& t = track_text(counter.track, "counter sample");
  if (!t.is_counter) [[unlikely]] {
    throw std::logic_error("trace::ChromeJsonWriter: counter sample on a thread track");
  }
  start_event();
  append_raw(buf_, "{\"ph\":\"C\",");
  append_raw(buf_, t.location);
  append_raw(buf_, ",\"ts\":");
  append_us_from_ps(buf_, whole_ns(counter.ts_ps));
  append_raw(buf_, ",\"args\":{");
  append_raw(buf_, t.series);
  buf_.push_back(':');
  append_json_double(buf_, counter.value);
  append_raw(buf_, "}}");
  end_event();
}

void ChromeJsonWriter::on_flow(const FlowEvent& flow) {
  const TrackText& t = track_text(flow.track, "flow event");
  if (t.is_counter) [[unlikely]] {
    throw std::logic_error("trace::ChromeJsonWriter: flow event on a counter track");
  }
  start_event();
  switch (flow.phase) {
    case FlowPhase::kBegin: append_raw(buf_, "{\"ph\":\"s\",\"id\":"); break;
    case FlowPhase::kStep: append_raw(buf_, "{\"ph\":\"t\",\"id\":"); break;
    case FlowPhase::kEnd: append_raw(buf_, "{\"ph\":\"f\",\"bp\":\"e\",\"id\":"); break;
  }
  append_uint(buf_, flow.flow_id);
  append_raw(buf_, ",\"name\":");
  append_json_string(buf_, flow.name);
  append_raw(buf_, ",\"cat\":");
  append_json_string(buf_, flow.category);
  buf_.push_back(',');
  append_raw(buf_, t.location);
  append_raw(buf_, ",\"ts\":");
  append_us_from_ps(buf_, whole_ns(flow.ts_ps));
  buf_.push_back('}');
  end_event();
}

void ChromeJsonWriter::finish() {
  if (finished_) return;
  if (!begun_) begin();
  finished_ = true;
  append_raw(buf_, "\n],\"displayTimeUnit\":\"ns\"}\n");
  if (file_) {
    write_buffer();
    file_->commit();
    return;
  }
  out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
  out_->flush();
  if (out_->fail()) throw std::runtime_error("writing the Chrome JSON trace failed: the output stream reported an error");
}

}  // namespace syntorch::trace
