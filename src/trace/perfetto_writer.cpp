#include "syntorch/trace/perfetto_writer.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <cmath>

#include "json_text.hpp"
#include "perfetto_trace.pb.h"
#include "proto_io.hpp"
#include "syntorch/trace/output_file.hpp"

namespace syntorch::trace {

namespace pp = perfetto::protos;

namespace {

constexpr std::uint32_t kSeqIncrementalStateCleared = 1;
constexpr std::uint32_t kSeqNeedsIncrementalState = 2;

std::uint64_t ns_of(TimePs ps) { return ps / 1000; }

// Process tracks live in the upper half of the uuid space, thread and counter tracks (numbered
// from 1 by track index) in the lower, so the two never collide.
std::uint64_t process_uuid(std::int32_t pid) {
  return (std::uint64_t{1} << 63) | static_cast<std::uint32_t>(pid);
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using InternTable = std::unordered_map<std::string, std::uint64_t, StringHash, std::equal_to<>>;

enum class InternKind : std::uint8_t { kName, kCategory, kAnnotation, kStringValue };

}  // namespace

struct PerfettoWriter::Impl {
  // A flow endpoint waiting for the next span on its track.
  struct PendingFlow {
    std::uint64_t flow_id;
    FlowPhase phase;
    TimePs ts_ps;
    std::uint64_t name_iid;
    std::uint64_t category_iid;
  };
  // A slice (with the slices it encloses) or an instant whose first-nanosecond packets are held:
  // its head, bytes [offset, the next entry's offset) of the track's window.
  struct Held {
    TimePs begin_ps;
    TimePs end_ps;
    std::uint64_t begin_ns;
    std::size_t offset;
    std::uint64_t packets;
  };
  struct Track {
    bool declared = false;
    bool counter = false;
    std::uint64_t uuid = 0;
    std::vector<PendingFlow> flows;
    std::string window;  // the held heads, from `head` on
    std::size_t head = 0;
    std::vector<Held> held;  // live entries: held[first..]
    std::size_t first = 0;
  };

  Options options;
  std::unique_ptr<OutputFile> file;
  std::ostream* out = nullptr;
  pp::TracePacket packet;    // reused for every packet
  pp::TracePacket interned;  // strings interned since the last event, written before it
  bool interned_pending = false;
  std::string buffer;   // one directly written packet
  std::string scratch;  // a slice begin inserted before the slices it encloses; sanitised text
  InternTable names, categories, annotation_names, string_values;
  static constexpr std::size_t kMaxInternedValueBytes = 1024;
  static constexpr std::size_t kMaxInternedValues = 1 << 18;
  std::vector<Track> tracks;
  std::vector<PendingFlow> bound;  // the flows bound to the span being written
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  bool first_packet = true;
  bool finished = false;

  void emit_bytes(const char* data, std::size_t size, std::uint64_t packet_count) {
    if (file) {
      file->write(data, size);
    } else {
      out->write(data, static_cast<std::streamsize>(size));
      if (out->fail()) [[unlikely]] {
        throw std::runtime_error("writing the Perfetto trace failed: the output stream is in a failed state");
      }
    }
    bytes += size;
    packets += packet_count;
  }

  void check_writable() const {
    if (finished) [[unlikely]] {
      throw std::logic_error("trace::PerfettoWriter: event after finish()");
    }
  }

  // Starts `packet` afresh on our sequence.
  pp::TracePacket& start_packet(std::uint32_t flags) {
    packet.Clear();
    packet.set_trusted_packet_sequence_id(kSequenceId);
    if (flags != 0) packet.set_sequence_flags(flags);
    return packet;
  }

  void write_direct(pp::TracePacket& p) {
    if (first_packet) {
      first_packet = false;
      p.set_sequence_flags(p.sequence_flags() | kSeqIncrementalStateCleared | kSeqNeedsIncrementalState);
      p.set_first_packet_on_sequence(true);
    }
    buffer.clear();
    detail::append_length_delimited(buffer, 1, p);
    emit_bytes(buffer.data(), buffer.size(), 1);
  }

  void flush_interned() {
    if (!interned_pending) return;
    interned_pending = false;
    interned.set_trusted_packet_sequence_id(kSequenceId);
    interned.set_sequence_flags(kSeqNeedsIncrementalState);
    write_direct(interned);
    interned.Clear();
  }

  std::uint64_t intern(InternTable& table, InternKind kind, std::string_view text) {
    if (auto it = table.find(text); it != table.end()) return it->second;
    const std::uint64_t iid = table.size() + 1;
    table.emplace(std::string(text), iid);
    detail::assign_valid_utf8(scratch, text);
    pp::InternedData* data = interned.mutable_interned_data();
    switch (kind) {
      case InternKind::kName: {
        pp::EventName* e = data->add_event_names();
        e->set_iid(iid);
        e->mutable_name()->assign(scratch);
        break;
      }
      case InternKind::kCategory: {
        pp::EventCategory* e = data->add_event_categories();
        e->set_iid(iid);
        e->mutable_name()->assign(scratch);
        break;
      }
      case InternKind::kAnnotation: {
        pp::DebugAnnotationName* e = data->add_debug_annotation_names();
        e->set_iid(iid);
        e->mutable_name()->assign(scratch);
        break;
      }
      case InternKind::kStringValue: {
        pp::InternedString* e = data->add_debug_annotation_string_values();
        e->set_iid(iid);
        e->mutable_str()->assign(scratch);
        break;
      }
    }
    interned_pending = true;
    return iid;
  }

  Track& track_of(TrackId id, bool counter, const char* what) {
    if (id.index >= tracks.size() || !tracks[id.index].declared) [[unlikely]] {
      throw std::logic_error(
          fmt::format("trace::PerfettoWriter: {} on track {}, which was never declared", what, id.index));
    }
    Track& t = tracks[id.index];
    if (t.counter != counter) [[unlikely]] {
      throw std::logic_error(fmt::format("trace::PerfettoWriter: {} on a {} track", what,
                                         t.counter ? "counter" : "thread"));
    }
    return t;
  }

  void set_string(std::string* field, std::string_view text) { detail::assign_valid_utf8(*field, text); }

  void add_args(pp::TrackEvent& te, std::span<const Arg> args) {
    for (const Arg& a : args) {
      pp::DebugAnnotation* d = te.add_debug_annotations();
      d->set_name_iid(intern(annotation_names, InternKind::kAnnotation, a.key));
      switch (a.value.type()) {
        case ArgValue::Type::kInt64: d->set_int_value(a.value.as_int64()); break;
        case ArgValue::Type::kUint64: d->set_uint_value(a.value.as_uint64()); break;
        case ArgValue::Type::kDouble: d->set_double_value(a.value.as_double()); break;
        case ArgValue::Type::kBool: d->set_bool_value(a.value.as_bool()); break;
        case ArgValue::Type::kString: {
          // Argument strings repeat (a kernel's reasons, its implementation, a shape): interned,
          // up to a bound on how many distinct ones are kept.
          const std::string_view v = a.value.as_string();
          if (v.size() <= kMaxInternedValueBytes && string_values.size() < kMaxInternedValues) {
            d->set_string_value_iid(intern(string_values, InternKind::kStringValue, v));
          } else if (auto known = string_values.find(v); known != string_values.end()) {
            d->set_string_value_iid(known->second);  // the table is full, but this one is in it
          } else {
            set_string(d->mutable_string_value(), v);
          }
          break;
        }
      }
    }
  }

  // Every endpoint goes in flow_ids: trace_processor links the slices that carry an id in the
  // order it reads them, so endpoints tied in one nanosecond, whose packets it may read end
  // first, still make their arrow (terminating_flow_ids on an end read before its begin drop
  // the flow). Ids are never reused, so nothing follows an end.
  static void add_flow(pp::TrackEvent& te, const PendingFlow& f) { te.add_flow_ids(f.flow_id); }

  // Fills `packet` with a track event of `type` at ts_ps on track t, named and categorised.
  pp::TrackEvent& start_track_event(const Track& t, pp::TrackEvent::Type type, TimePs ts_ps, std::uint64_t name_iid,
                                    std::uint64_t category_iid) {
    start_packet(kSeqNeedsIncrementalState);
    packet.set_timestamp(ns_of(ts_ps));
    pp::TrackEvent* te = packet.mutable_track_event();
    te->set_type(type);
    te->set_track_uuid(t.uuid);
    te->set_name_iid(name_iid);
    if (category_iid != 0) te->add_category_iids(category_iid);
    return *te;
  }

  std::uint64_t category_iid(std::string_view category) {
    return category.empty() ? 0 : intern(categories, InternKind::kCategory, category);
  }

  // Holds `packet` (an instant) as a new entry of t's window: all of it is its first nanosecond.
  void hold_instant(Track& t, TimePs ts_ps) {
    flush_interned();
    const std::size_t at = t.window.size();
    detail::append_length_delimited(t.window, 1, packet);
    t.held.push_back({ts_ps, ts_ps, ns_of(ts_ps), at, 1});
    trim(t);
  }

  void hold_unbound_flow(Track& t, const PendingFlow& f) {
    pp::TrackEvent& te = start_track_event(t, pp::TrackEvent::TYPE_INSTANT, f.ts_ps, f.name_iid, f.category_iid);
    add_flow(te, f);
    hold_instant(t, f.ts_ps);
  }

  std::size_t end_of(const Track& t, std::size_t i) const {
    return i + 1 < t.held.size() ? t.held[i + 1].offset : t.window.size();
  }

  // Writes the oldest held heads out while the window is over budget.
  void trim(Track& t) {
    while (t.first < t.held.size() && t.window.size() - t.head > options.reorder_window_bytes) write_oldest(t);
  }

  void write_oldest(Track& t) {
    const std::size_t end = end_of(t, t.first);
    const std::size_t begin = t.held[t.first].offset;
    emit_bytes(t.window.data() + begin, end - begin, t.held[t.first].packets);
    t.head = end;
    ++t.first;
    if (t.first == t.held.size()) {
      t.window.clear();
      t.held.clear();
      t.head = 0;
      t.first = 0;
    } else if (t.head > t.window.size() / 2) {
      t.window.erase(0, t.head);
      for (std::size_t i = t.first; i < t.held.size(); ++i) t.held[i].offset -= t.head;
      t.held.erase(t.held.begin(), t.held.begin() + static_cast<std::ptrdiff_t>(t.first));
      t.head = 0;
      t.first = 0;
    }
  }

  void write_all_held(Track& t) {
    for (const PendingFlow& f : t.flows) hold_unbound_flow(t, f);
    t.flows.clear();
    while (t.first < t.held.size()) write_oldest(t);
  }

  void on_span(const SpanEvent& span) {
    check_writable();
    Track& t = track_of(span.track, false, "span");

    // Flow endpoints emitted just before this span bind to it when it encloses them.
    bound.clear();
    for (const PendingFlow& f : t.flows) {
      if (f.ts_ps >= span.begin_ps && f.ts_ps <= span.end_ps) {
        bound.push_back(f);
      } else {
        hold_unbound_flow(t, f);
      }
    }
    t.flows.clear();

    const std::uint64_t name_iid = intern(names, InternKind::kName, span.name);
    pp::TrackEvent& te =
        start_track_event(t, pp::TrackEvent::TYPE_SLICE_BEGIN, span.begin_ps, name_iid, category_iid(span.category));
    add_args(te, span.args);
    for (const PendingFlow& f : bound) add_flow(te, f);
    flush_interned();

    // Perfetto orders packets by timestamp, and those with equal timestamps by file position.
    // Spans arrive at their end, so the held entries this span encloses are its descendants, the
    // newest ones: its begin must precede their packets in the same nanosecond (their heads).
    // Heads in a later nanosecond no later span can tie with (any later ancestor encloses this
    // span too, so begins no later), so they are written now; heads in this span's first
    // nanosecond join its own head, after its begin.
    const std::uint64_t begin_ns = ns_of(span.begin_ps);
    const std::uint64_t end_ns = ns_of(span.end_ps);
    std::size_t k = t.held.size();
    while (k > t.first && t.held[k - 1].begin_ps >= span.begin_ps && t.held[k - 1].end_ps <= span.end_ps) --k;
    scratch.clear();
    detail::append_length_delimited(scratch, 1, packet);
    std::uint64_t count = 1;
    for (std::size_t i = k; i < t.held.size(); ++i) {
      const char* head = t.window.data() + t.held[i].offset;
      const std::size_t size = end_of(t, i) - t.held[i].offset;
      if (t.held[i].begin_ns == begin_ns) {
        scratch.append(head, size);
        count += t.held[i].packets;
      } else {
        emit_bytes(head, size, t.held[i].packets);
      }
    }
    start_packet(0);
    packet.set_timestamp(end_ns);
    pp::TrackEvent* end = packet.mutable_track_event();
    end->set_type(pp::TrackEvent::TYPE_SLICE_END);
    end->set_track_uuid(t.uuid);
    if (end_ns == begin_ns) {
      detail::append_length_delimited(scratch, 1, packet);
      ++count;
    } else {
      buffer.clear();
      detail::append_length_delimited(buffer, 1, packet);
      emit_bytes(buffer.data(), buffer.size(), 1);
    }
    const std::size_t at = k < t.held.size() ? t.held[k].offset : t.window.size();
    t.held.resize(k);
    t.window.resize(at);
    t.window.append(scratch);
    t.held.push_back({span.begin_ps, span.end_ps, begin_ns, at, count});
    trim(t);
  }
};

PerfettoWriter::PerfettoWriter(std::ostream& out) : PerfettoWriter(out, Options{}) {}

PerfettoWriter::PerfettoWriter(std::ostream& out, Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->out = &out;
}

PerfettoWriter::PerfettoWriter(const std::filesystem::path& path) : PerfettoWriter(path, Options{}) {}

PerfettoWriter::PerfettoWriter(const std::filesystem::path& path, Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->file = std::make_unique<OutputFile>(path);
}

PerfettoWriter::~PerfettoWriter() = default;


void PerfettoWriter::on_process(const ProcessInfo& process) {
  Impl& m = *impl_;
  m.check_writable();
  pp::TracePacket& p = m.start_packet(0);
  pp::TrackDescriptor* d = p.mutable_track_descriptor();
  d->set_uuid(process_uuid(process.pid));
  d->set_child_ordering(pp::TrackDescriptor::EXPLICIT);
  d->set_sibling_order_rank(process.sort_index);
  pp::ProcessDescriptor* pd = d->mutable_process();
  pd->set_pid(process.pid);
  m.set_string(pd->mutable_process_name(), process.name);
  m.write_direct(p);
}

void PerfettoWriter::on_track(const TrackInfo& track) {
  Impl& m = *impl_;
  m.check_writable();
  if (!track.id.valid()) throw std::logic_error("trace::PerfettoWriter: track without an id");
  if (track.id.index >= m.tracks.size()) m.tracks.resize(track.id.index + 1);
  Impl::Track& t = m.tracks[track.id.index];
  t.declared = true;
  t.counter = track.kind == TrackKind::kCounter;
  t.uuid = std::uint64_t{track.id.index} + 1;

  pp::TracePacket& p = m.start_packet(0);
  pp::TrackDescriptor* d = p.mutable_track_descriptor();
  d->set_uuid(t.uuid);
  d->set_parent_uuid(process_uuid(track.pid));
  d->set_sibling_order_rank(track.sort_index);
  if (t.counter) {
    m.set_string(d->mutable_name(), track.name);
    pp::CounterDescriptor* c = d->mutable_counter();
    if (track.unit == "bytes") {
      c->set_unit(pp::CounterDescriptor::UNIT_SIZE_BYTES);
    } else if (!track.unit.empty()) {
      m.set_string(c->mutable_unit_name(), track.unit);
    }
  } else {
    pp::ThreadDescriptor* td = d->mutable_thread();
    td->set_pid(track.pid);
    td->set_tid(track.tid);
    m.set_string(td->mutable_thread_name(), track.name);
  }
  m.write_direct(p);
}

void PerfettoWriter::on_span(const SpanEvent& span) { impl_->on_span(span); }

void PerfettoWriter::on_instant(const InstantEvent& instant) {
  Impl& m = *impl_;
  m.check_writable();
  Impl::Track& t = m.track_of(instant.track, false, "instant");
  const std::uint64_t name_iid = m.intern(m.names, InternKind::kName, instant.name);
  pp::TrackEvent& te =
      m.start_track_event(t, pp::TrackEvent::TYPE_INSTANT, instant.ts_ps, name_iid, m.category_iid(instant.category));
  m.add_args(te, instant.args);
  m.hold_instant(t, instant.ts_ps);
}

void PerfettoWriter::on_counter(const CounterEvent& counter) {
  Impl& m = *impl_;
  m.check_writable();
  const Impl::Track& t = m.track_of(counter.track, true, "counter sample");
  pp::TracePacket& p = m.start_packet(0);
  p.set_timestamp(ns_of(counter.ts_ps));
  pp::TrackEvent* te = p.mutable_track_event();
  te->set_type(pp::TrackEvent::TYPE_COUNTER);
  te->set_track_uuid(t.uuid);
  // Whole values (bytes, units in use) as a varint, the rest as a double.
  if (counter.value == std::floor(counter.value) && std::fabs(counter.value) < 0x1p62) {
    te->set_counter_value(static_cast<std::int64_t>(counter.value));
  } else {
    te->set_double_counter_value(counter.value);
  }
  m.write_direct(p);
}

void PerfettoWriter::on_flow(const FlowEvent& flow) {
  Impl& m = *impl_;
  m.check_writable();
  Impl::Track& t = m.track_of(flow.track, false, "flow event");
  const std::uint64_t name_iid = m.intern(m.names, InternKind::kName, flow.name);
  const std::uint64_t category_iid = m.category_iid(flow.category);
  t.flows.push_back({flow.flow_id, flow.phase, flow.ts_ps, name_iid, category_iid});
}

void PerfettoWriter::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  for (Impl::Track& t : m.tracks) m.write_all_held(t);
  m.finished = true;
  if (m.file) {
    m.file->commit();
  } else {
    m.out->flush();
    if (m.out->fail()) throw std::runtime_error("writing the Perfetto trace failed: the output stream reported an error");
  }
}

std::uint64_t PerfettoWriter::packets_written() const noexcept { return impl_->packets; }
std::uint64_t PerfettoWriter::bytes_written() const noexcept { return impl_->bytes; }

}  // namespace syntorch::trace
