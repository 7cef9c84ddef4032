#include "syntorch/trace/trace_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "et_def.pb.h"
#include "perfetto_trace.pb.h"
#include "proto_io.hpp"
#include "syntorch/trace/open_trace_writer.hpp"

namespace syntorch::trace {

namespace fs = std::filesystem;
namespace pp = perfetto::protos;
namespace et = ChakraProtoMsg;

namespace {

constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{256} << 20;

// A file read through zlib, which passes files that are not gzip through unchanged.
class InputFile : public std::streambuf {
 public:
  explicit InputFile(const fs::path& path) : path_(path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) throw TraceFileError(fmt::format("cannot read '{}': no such file", path.string()));
    if (fs::is_directory(st)) throw TraceFileError(fmt::format("cannot read '{}': it is a directory", path.string()));
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      throw TraceFileError(fmt::format("cannot read '{}': {}", path.string(), errno != 0 ? std::strerror(errno) : "?"));
    }
    gzbuffer(file_, 1 << 17);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() override { gzclose(file_); }

  // Reads exactly n bytes; false when the file ends first.
  bool read(char* out, std::size_t n) {
    return static_cast<std::size_t>(sgetn(out, static_cast<std::streamsize>(n))) == n;
  }
  std::uint64_t offset() const { return consumed_ - static_cast<std::uint64_t>(egptr() - gptr()); }
  const fs::path& path() const { return path_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_, sizeof buffer_);
    if (n < 0) {
      int code = 0;
      const char* what = gzerror(file_, &code);
      throw TraceFileError(fmt::format("cannot read '{}': {}", path_.string(),
                                       code == Z_ERRNO ? std::strerror(errno) : what));
    }
    if (n == 0) return traits_type::eof();
    consumed_ += static_cast<std::uint64_t>(n);
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  fs::path path_;
  gzFile file_ = nullptr;
  std::uint64_t consumed_ = 0;
  char buffer_[1 << 16];
};

// Per-track counts, keyed by a format-specific string, in order of first appearance.
class Tally {
 public:
  std::size_t track(const std::string& key) {
    auto [it, inserted] = index_.try_emplace(key, tracks_.size());
    if (inserted) {
      tracks_.emplace_back();
      seen_.push_back(false);
    }
    return it->second;
  }
  // An event on track i spanning [t0, t1]; `count` false for an end marker.
  void event(std::size_t i, TimePs t0, TimePs t1, bool count) {
    TrackSummary& t = tracks_[i];
    if (count) ++t.events;
    if (!seen_[i]) {
      seen_[i] = true;
      t.first_ps = t0;
      t.last_ps = t1;
    } else {
      t.first_ps = std::min(t.first_ps, t0);
      t.last_ps = std::max(t.last_ps, t1);
    }
  }
  std::vector<TrackSummary>& tracks() { return tracks_; }

  TraceFileSummary finish(std::string format, std::vector<fs::path> files, std::uint64_t flows) {
    TraceFileSummary s;
    s.format = std::move(format);
    s.files = std::move(files);
    s.flow_endpoints = flows;
    bool any = false;
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
      s.events += tracks_[i].events;
      if (!seen_[i]) continue;
      s.first_ps = any ? std::min(s.first_ps, tracks_[i].first_ps) : tracks_[i].first_ps;
      s.last_ps = any ? std::max(s.last_ps, tracks_[i].last_ps) : tracks_[i].last_ps;
      any = true;
    }
    s.tracks = std::move(tracks_);
    return s;
  }

 private:
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<TrackSummary> tracks_;
  std::vector<bool> seen_;
};

TimePs ps_of_us(double us) { return us <= 0 || !std::isfinite(us) ? 0 : static_cast<TimePs>(std::llround(us * 1e6)); }

// ---------------------------------------------------------------- Chrome JSON (SAX)

class ChromeSax {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(number_integer_t v) { return number(static_cast<double>(v), std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) { return number(static_cast<double>(v), std::to_string(v)); }
  bool number_float(number_float_t v, const string_t& text) { return number(v, text); }
  bool string(string_t& v) {
    if (where() == Where::kEvent) {
      if (key_ == "ph") ev_.ph = v;
      else if (key_ == "name") ev_.name = v;
      else if (key_ == "pid") ev_.pid = v;
      else if (key_ == "tid") ev_.tid = v;
    } else if (where() == Where::kArgs && key_ == "name") {
      ev_.args_name = v;
    }
    return true;
  }
  bool binary(binary_t&) { return true; }
  bool start_object(std::size_t) {
    if (stack_.empty()) {
      stack_.push_back(Where::kTop);
    } else if (where() == Where::kEvents) {
      stack_.push_back(Where::kEvent);
      ev_ = Event{};
    } else if (where() == Where::kEvent && key_ == "args") {
      stack_.push_back(Where::kArgs);
    } else {
      stack_.push_back(Where::kOther);
    }
    return true;
  }
  bool key(string_t& k) {
    key_ = k;
    return true;
  }
  bool end_object() {
    if (where() == Where::kEvent) take_event();
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (stack_.empty() || (where() == Where::kTop && stack_.size() == 1 && key_ == "traceEvents")) {
      stack_.push_back(Where::kEvents);
      saw_events_ = true;
    } else {
      stack_.push_back(Where::kOther);
    }
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    error_ = e.what();
    return false;
  }

  const std::string& error() const { return error_; }
  bool saw_events() const { return saw_events_; }

  TraceFileSummary finish(fs::path path) {
    for (const auto& [key, i] : thread_tracks_) {
      TrackSummary& t = tally_.tracks()[i];
      t.process = process_name(key.first);
      auto name = thread_names_.find(key);
      t.track = name != thread_names_.end() ? name->second : "tid " + key.second;
    }
    for (const auto& [key, i] : counter_tracks_) {
      TrackSummary& t = tally_.tracks()[i];
      t.process = process_name(key.first);
      t.track = key.second;
    }
    return tally_.finish("chrome", {std::move(path)}, flows_);
  }

 private:
  enum class Where : std::uint8_t { kTop, kEvents, kEvent, kArgs, kOther };
  struct Event {
    std::string ph, name, pid, tid, args_name;
    double ts = 0, dur = 0;
  };

  Where where() const { return stack_.empty() ? Where::kOther : stack_.back(); }

  bool number(double v, const std::string& text) {
    if (where() != Where::kEvent) return true;
    if (key_ == "ts") ev_.ts = v;
    else if (key_ == "dur") ev_.dur = v;
    else if (key_ == "pid") ev_.pid = text;
    else if (key_ == "tid") ev_.tid = text;
    return true;
  }

  std::string process_name(const std::string& pid) const {
    auto it = process_names_.find(pid);
    return it != process_names_.end() ? it->second : "pid " + pid;
  }

  void take_event() {
    const std::string& ph = ev_.ph;
    if (ph == "M") {
      if (ev_.name == "process_name") process_names_[ev_.pid] = ev_.args_name;
      if (ev_.name == "thread_name") thread_names_[{ev_.pid, ev_.tid}] = ev_.args_name;
      return;
    }
    const TimePs t0 = ps_of_us(ev_.ts);
    if (ph == "s" || ph == "t" || ph == "f") {
      ++flows_;
      return;
    }
    std::size_t i;
    if (ph == "C") {
      auto [it, inserted] = counter_tracks_.try_emplace({ev_.pid, ev_.name}, 0);
      if (inserted) it->second = tally_.track("C\n" + ev_.pid + "\n" + ev_.name);
      i = it->second;
    } else {
      auto [it, inserted] = thread_tracks_.try_emplace({ev_.pid, ev_.tid}, 0);
      if (inserted) it->second = tally_.track("T\n" + ev_.pid + "\n" + ev_.tid);
      i = it->second;
    }
    const bool end_marker = ph == "E" || ph == "e";
    tally_.event(i, t0, ph == "X" ? t0 + ps_of_us(ev_.dur) : t0, !end_marker);
  }

  std::vector<Where> stack_;
  std::string key_;
  Event ev_;
  Tally tally_;
  std::map<std::pair<std::string, std::string>, std::size_t> thread_tracks_;
  std::map<std::pair<std::string, std::string>, std::size_t> counter_tracks_;
  std::map<std::string, std::string> process_names_;
  std::map<std::pair<std::string, std::string>, std::string> thread_names_;
  std::uint64_t flows_ = 0;
  std::string error_;
  bool saw_events_ = false;
};

TraceFileSummary read_chrome(const fs::path& path) {
  InputFile in(path);
  std::istream stream(&in);
  ChromeSax sax;
  const bool ok = nlohmann::json::sax_parse(stream, &sax);
  if (!ok) throw TraceFileError(fmt::format("'{}' is not a Chrome JSON trace: {}", path.string(), sax.error()));
  if (!sax.saw_events()) {
    throw TraceFileError(fmt::format("'{}' is not a Chrome JSON trace: it has no \"traceEvents\" array", path.string()));
  }
  return sax.finish(path);
}

// ---------------------------------------------------------------- Perfetto protobuf

TraceFileSummary read_perfetto(const fs::path& path) {
  InputFile in(path);
  struct Descriptor {
    bool process = false;
    bool thread = false;
    std::int32_t pid = 0;
    std::int32_t tid = 0;
    std::uint64_t parent = 0;
    std::string name;
  };
  std::unordered_map<std::uint64_t, Descriptor> descriptors;
  std::unordered_map<std::uint64_t, std::size_t> track_of_uuid;
  std::vector<std::uint64_t> uuids;  // by track index
  Tally tally;
  const auto track_index = [&](std::uint64_t uuid) {
    auto [it, inserted] = track_of_uuid.try_emplace(uuid, 0);
    if (inserted) {
      it->second = tally.track(std::to_string(uuid));
      uuids.push_back(uuid);
    }
    return it->second;
  };
  std::uint64_t flows = 0;
  pp::TracePacket packet;
  std::string bytes;
  std::uint64_t packets = 0;
  const auto bad = [&](std::string_view what) {
    return TraceFileError(fmt::format("'{}' is not a Perfetto trace: {} (packet {}, byte offset {})", path.string(),
                                      what, packets + 1, in.offset()));
  };
  for (;;) {
    std::uint64_t tag = 0;
    bool malformed = false;
    if (!detail::read_varint(in, tag, malformed)) {
      if (malformed) throw bad("truncated field tag");
      break;
    }
    const std::uint64_t wire = tag & 7;
    if ((tag >> 3) == 0) throw bad("field number 0");
    std::uint64_t length = 0;
    switch (wire) {
      case 0:
        if (!detail::read_varint(in, length, malformed)) throw bad("truncated varint");
        continue;
      case 1: length = 8; break;
      case 5: length = 4; break;
      case 2:
        if (!detail::read_varint(in, length, malformed)) throw bad("truncated length");
        if (length > kMaxMessageBytes) throw bad(fmt::format("a {}-byte packet", length));
        break;
      default: throw bad(fmt::format("unexpected wire type {}", wire));
    }
    bytes.resize(length);
    if (!in.read(bytes.data(), length)) throw bad("the file ends inside a packet");
    if (tag != ((1u << 3) | 2)) continue;  // not Trace.packet
    if (!packet.ParseFromString(bytes)) throw bad("undecodable TracePacket");
    ++packets;
    if (packet.has_track_descriptor()) {
      const pp::TrackDescriptor& d = packet.track_descriptor();
      Descriptor& info = descriptors[d.uuid()];
      info.parent = d.parent_uuid();
      info.name = d.name();
      if (d.has_process()) {
        info.process = true;
        info.pid = d.process().pid();
        if (info.name.empty()) info.name = d.process().process_name();
      }
      if (d.has_thread()) {
        info.thread = true;
        info.pid = d.thread().pid();
        info.tid = d.thread().tid();
        if (info.name.empty()) info.name = d.thread().thread_name();
      }
      if (!info.process) track_index(d.uuid());
      continue;
    }
    if (!packet.has_track_event()) continue;
    const pp::TrackEvent& e = packet.track_event();
    const TimePs ts = packet.timestamp() * 1000;
    flows += static_cast<std::uint64_t>(e.flow_ids_size() + e.terminating_flow_ids_size());
    tally.event(track_index(e.track_uuid()), ts, ts, e.type() != pp::TrackEvent::TYPE_SLICE_END);
  }

  // Name the tracks: the process is the descriptor's own (process tracks), its parent's, or
  // the process descriptor with the thread's pid.
  std::unordered_map<std::int32_t, std::string> process_by_pid;
  for (const auto& [uuid, d] : descriptors) {
    if (d.process) process_by_pid[d.pid] = d.name;
  }
  TraceFileSummary s = tally.finish("perfetto", {path}, flows);
  for (std::size_t i = 0; i < s.tracks.size(); ++i) {
    TrackSummary& t = s.tracks[i];
    const std::uint64_t uuid = uuids[i];
    auto d = descriptors.find(uuid);
    if (d == descriptors.end()) {
      t.process = "?";
      t.track = fmt::format("track {}", uuid);
      continue;
    }
    std::string process;
    if (auto parent = descriptors.find(d->second.parent); parent != descriptors.end() && parent->second.process) {
      process = parent->second.name;
    } else if (d->second.thread) {
      auto p = process_by_pid.find(d->second.pid);
      process = p != process_by_pid.end() ? p->second : fmt::format("pid {}", d->second.pid);
    }
    t.process = process;
    t.track = d->second.name.empty() && d->second.thread ? fmt::format("tid {}", d->second.tid) : d->second.name;
  }
  return s;
}

// ---------------------------------------------------------------- Chakra execution traces

// The rank of "<prefix>.<rank>.et", when the name has that form.
std::optional<std::int64_t> rank_of(const fs::path& file) {
  const std::string stem = file.stem().string();  // "<prefix>.<rank>"
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size()) return std::nullopt;
  std::int64_t rank = 0;
  const auto [end, ec] = std::from_chars(stem.data() + dot + 1, stem.data() + stem.size(), rank);
  if (ec != std::errc() || end != stem.data() + stem.size()) return std::nullopt;
  return rank;
}

std::vector<fs::path> chakra_files(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return {path};
  // "dir/run.et" names the workload "dir/run.<rank>.et".
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.stem().string() + ".";
  std::vector<std::pair<std::int64_t, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (p.extension() != ".et" || !name.starts_with(prefix)) continue;
    if (p.stem().string().size() <= prefix.size() - 1) continue;
    const auto rank = rank_of(p);
    if (rank && p.stem().string() == prefix + std::to_string(*rank)) found.emplace_back(*rank, p);
  }
  if (found.empty()) {
    throw TraceFileError(fmt::format("cannot read '{}': no such file, nor rank files '{}<rank>.et' beside it",
                                     path.string(), (path.parent_path() / prefix).string()));
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files;
  for (auto& [rank, p] : found) files.push_back(std::move(p));
  return files;
}

TraceFileSummary read_chakra(const fs::path& path) {
  const std::vector<fs::path> files = chakra_files(path);
  Tally tally;
  std::string bytes;
  et::GlobalMetadata meta;
  et::Node node;
  for (const fs::path& file : files) {
    InputFile in(file);
    const auto rank = rank_of(file);
    const std::string process = rank ? fmt::format("rank {}", *rank) : file.filename().string();
    std::uint64_t messages = 0;
    const auto bad = [&](std::string_view what) {
      return TraceFileError(fmt::format("'{}' is not a Chakra execution trace: {} (message {}, byte offset {})",
                                        file.string(), what, messages + 1, in.offset()));
    };
    for (;;) {
      std::uint64_t length = 0;
      bool malformed = false;
      if (!detail::read_varint(in, length, malformed)) {
        if (malformed) throw bad("truncated length");
        break;
      }
      if (length > kMaxMessageBytes) throw bad(fmt::format("a {}-byte message", length));
      bytes.resize(length);
      if (!in.read(bytes.data(), length)) throw bad("the file ends inside a message");
      if (messages == 0) {
        if (!meta.ParseFromString(bytes) || meta.version().empty()) throw bad("no GlobalMetadata with a version");
      } else {
        if (!node.ParseFromString(bytes)) throw bad("undecodable Node");
        const std::size_t i = tally.track(process + "\n" + et::NodeType_Name(node.type()));
        TrackSummary& t = tally.tracks()[i];
        if (t.track.empty()) {
          t.process = process;
          t.track = et::NodeType_Name(node.type());
          if (t.track.empty()) t.track = fmt::format("node type {}", static_cast<int>(node.type()));
        }
        const TimePs begin = node.start_time_micros() * kPsPerUs;
        tally.event(i, begin, begin + node.duration_micros() * kPsPerUs, true);
      }
      ++messages;
    }
    if (messages == 0) throw bad("the file is empty");
  }
  return tally.finish("chakra", files, 0);
}

// ---------------------------------------------------------------- CSV

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
std::string us_text(TimePs ps) {
  const TimePs ns = (ps + 500) / 1000;
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace

TraceFileSummary summarize_trace_file(const fs::path& path) {
  // The writers' own table of formats by extension.
  if (const auto format = trace_format_from_path(path)) {
    switch (*format) {
      case TraceFormat::kChrome: return read_chrome(path);
      case TraceFormat::kPerfetto: return read_perfetto(path);
      case TraceFormat::kChakra: return read_chakra(path);
      case TraceFormat::kCsv: return read_csv(path);
    }
  }
  throw TraceFileError(
      fmt::format("cannot tell the trace format of '{}' from its name (valid: {})", path.string(), valid_trace_formats()));
}

std::string format_trace_summary(const TraceFileSummary& s) {
  fmt::memory_buffer b;
  std::string files;
  for (const fs::path& f : s.files) files += (files.empty() ? "" : ", ") + f.string();
  fmt::format_to(fmt::appender(b), "{} trace: {}\n", s.format, files);
  std::size_t pw = 7, tw = 5;
  for (const TrackSummary& t : s.tracks) {
    pw = std::max(pw, t.process.size());
    tw = std::max(tw, t.track.size());
  }
  fmt::format_to(fmt::appender(b), "  {:<{}}  {:<{}}  {:>10}  {:>16}  {:>16}\n", "process", pw, "track", tw, "events",
                 "first (us)", "last (us)");
  for (const TrackSummary& t : s.tracks) {
    fmt::format_to(fmt::appender(b), "  {:<{}}  {:<{}}  {:>10}  {:>16}  {:>16}\n", t.process, pw, t.track, tw, t.events,
                   t.events == 0 ? "-" : us_text(t.first_ps), t.events == 0 ? "-" : us_text(t.last_ps));
  }
  fmt::format_to(fmt::appender(b), "total: {} events on {} tracks", s.events, s.tracks.size());
  if (s.events > 0) {
    fmt::format_to(fmt::appender(b), ", {} us .. {} us (span {} us)", us_text(s.first_ps), us_text(s.last_ps),
                   us_text(s.last_ps - s.first_ps));
  }
  if (s.flow_endpoints > 0) fmt::format_to(fmt::appender(b), ", {} flow endpoints", s.flow_endpoints);
  b.push_back('\n');
  return fmt::to_string(b);
}

}  // namespace syntorch::trace
