#include "syntorch/trace/csv_writer.hpp"

#include <stdexcept>

#include "json_text.hpp"

namespace syntorch::trace {

namespace {

// Appends `text` as one CSV field, quoted when it holds a comma, a quote or a line break.
void append_field(fmt::memory_buffer& out, std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    detail::append_raw(out, text);
    return;
  }
  out.push_back('"');
  for (const char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_value(fmt::memory_buffer& out, const ArgValue& v) {
  switch (v.type()) {
    case ArgValue::Type::kInt64: detail::append_int(out, v.as_int64()); break;
    case ArgValue::Type::kUint64: detail::append_uint(out, v.as_uint64()); break;
    case ArgValue::Type::kDouble: fmt::format_to(fmt::appender(out), "{}", v.as_double()); break;
    case ArgValue::Type::kBool: detail::append_raw(out, v.as_bool() ? "true" : "false"); break;
    case ArgValue::Type::kString: append_field(out, v.as_string()); break;
  }
}

const ArgValue* find_arg(std::span<const Arg> args, std::string_view key) {
  for (const Arg& a : args) {
    if (a.key == key) return &a.value;
  }
  return nullptr;
}

}  // namespace

CsvWriter::CsvWriter(std::ostream& out) : out_(&out) {}

CsvWriter::CsvWriter(const std::filesystem::path& path) : file_(std::make_unique<OutputFile>(path)) {}

CsvWriter::~CsvWriter() = default;

void CsvWriter::write_buffer() {
  if (file_) {
    file_->write(buf_.data(), buf_.size());
  } else {
    out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    if (out_->fail()) [[unlikely]] {
      throw std::runtime_error("writing the CSV trace failed: the output stream is in a failed state");
    }
  }
  buf_.clear();
}

void CsvWriter::write_header() {
  if (header_written_) return;
  header_written_ = true;
  detail::append_raw(buf_, kHeader);
  buf_.push_back('\n');
  write_buffer();
}

void CsvWriter::begin() { write_header(); }

void CsvWriter::on_process(const ProcessInfo&) {}

void CsvWriter::on_track(const TrackInfo& track) {
  if (!track.id.valid()) throw std::logic_error("trace::CsvWriter: track without an id");
  if (track.id.index >= tracks_.size()) tracks_.resize(track.id.index + 1);
  TrackText& t = tracks_[track.id.index];
  t.declared = true;
  fmt::memory_buffer tmp;
  detail::append_int(tmp, rank_of_pid(track.pid));
  tmp.push_back(',');
  append_field(tmp, track.name);
  tmp.push_back(',');
  t.prefix = fmt::to_string(tmp);
}

void CsvWriter::on_span(const SpanEvent& span) {
  if (span.category != "kernel") return;
  if (finished_) [[unlikely]] {
    throw std::logic_error("trace::CsvWriter: event after finish()");
  }
  if (span.track.index >= tracks_.size() || !tracks_[span.track.index].declared) [[unlikely]] {
    throw std::logic_error(fmt::format("trace::CsvWriter: span on track {}, which was never declared", span.track.index));
  }
  write_header();
  detail::append_raw(buf_, tracks_[span.track.index].prefix);
  append_field(buf_, span.name);
  for (const std::string_view key : {"op", "impl", "tile"}) {
    buf_.push_back(',');
    if (const ArgValue* v = find_arg(span.args, key)) {
      append_value(buf_, *v);
    } else if (key == "op") {
      append_field(buf_, span.name);  // a kernel named after its op carries no separate "op"
    }
  }
  buf_.push_back(',');
  detail::append_us_from_ps(buf_, span.begin_ps);
  buf_.push_back(',');
  detail::append_us_from_ps(buf_, span.end_ps >= span.begin_ps ? span.end_ps - span.begin_ps : 0);
  for (const std::string_view key : {"flops", "hbm_bytes", "bound"}) {
    buf_.push_back(',');
    if (const ArgValue* v = find_arg(span.args, key)) append_value(buf_, *v);
  }
  buf_.push_back('\n');
  ++rows_;
  write_buffer();
}

void CsvWriter::on_instant(const InstantEvent&) {}
void CsvWriter::on_counter(const CounterEvent&) {}
void CsvWriter::on_flow(const FlowEvent&) {}

void CsvWriter::finish() {
  if (finished_) return;
  write_header();
  finished_ = true;
  if (file_) {
    file_->commit();
    return;
  }
  out_->flush();
  if (out_->fail()) throw std::runtime_error("writing the CSV trace failed: the output stream reported an error");
}

}  // namespace syntorch::trace
