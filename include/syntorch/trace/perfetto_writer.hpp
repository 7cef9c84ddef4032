#pragma once
// A Sink that streams Perfetto's native protobuf trace (".pftrace", what ui.perfetto.dev and
// trace_processor open): a Trace message written one `packet` (field 1) at a time, all packets on
// one trusted packet sequence (kSequenceId) with interned event names, categories and argument
// names. Far smaller than Chrome JSON for the same events, and quicker to load.
//
// Mapping (field numbers in src/trace/proto/perfetto_trace.proto, facts in docs/traces.md):
//   process       TrackDescriptor{uuid = derived from pid, ProcessDescriptor{pid, name}}
//   thread track  TrackDescriptor{uuid, parent = its process, ThreadDescriptor{pid, tid, name}}
//   counter track TrackDescriptor{uuid, parent = its process, name, CounterDescriptor{unit}}
//                 ("bytes" becomes UNIT_SIZE_BYTES, any other unit unit_name)
//   span          TYPE_SLICE_BEGIN at begin (name, category, args as debug annotations) and
//                 TYPE_SLICE_END at end
//   instant       TYPE_INSTANT;  counter sample  TYPE_COUNTER with double_counter_value
//   flow endpoint its flow id in flow_ids (begin, step) or terminating_flow_ids (end) of the
//                 next span on its track when that span encloses it (the simulator emits each
//                 endpoint just before its enclosing span), else of a TYPE_INSTANT at its time.
// Times are nanoseconds, picoseconds / 1000 rounded down (order is kept; ties stay ties).
//
// Order: Perfetto sorts packets by timestamp and keeps file order among equal timestamps, while
// spans arrive at their end, children before parents. So that a parent beginning in the same
// nanosecond as its first child (a scope and its first op) still opens first, each thread track
// holds back the packets of its pending slices' first nanosecond (their heads, already encoded)
// until an enclosing span arrives and puts its begin before them; everything else is written at
// once. A track whose held heads outgrow Options::reorder_window_bytes writes its oldest out.
//
// Memory is flat: one reused TracePacket, one output buffer, the per-track windows and the
// intern tables (distinct strings only).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class PerfettoWriter final : public Sink {
 public:
  // The trusted_packet_sequence_id of every packet.
  static constexpr std::uint32_t kSequenceId = 7;

  struct Options {
    // Encoded bytes of held slice heads a thread track may keep for reordering.
    std::size_t reorder_window_bytes = std::size_t{64} << 10;
  };

  // Writes to `out`, which must outlive the writer (or at least its finish()).
  explicit PerfettoWriter(std::ostream& out);
  PerfettoWriter(std::ostream& out, Options options);
  // Writes "<path>.partial", renamed to `path` by finish() (see OutputFile); throws
  // std::runtime_error naming the path when it cannot be created.
  explicit PerfettoWriter(const std::filesystem::path& path);
  PerfettoWriter(const std::filesystem::path& path, Options options);
  PerfettoWriter(const PerfettoWriter&) = delete;
  PerfettoWriter& operator=(const PerfettoWriter&) = delete;
  // Without finish(): a file writer removes its partial file; a stream gets nothing more.
  ~PerfettoWriter() override;

  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  // Writes every held slice and unbound flow endpoint, then flushes (and commits the file);
  // throws std::runtime_error on a write error. Later calls do nothing.
  void finish() override;

  // Packets and bytes written out so far (held slices are not counted until written).
  std::uint64_t packets_written() const noexcept;
  std::uint64_t bytes_written() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace syntorch::trace
