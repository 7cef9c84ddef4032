#pragma once
// The front door every simulator layer emits trace events into: it declares processes and tracks
// (handing out TrackIds), fans each event out to the attached Sinks, and numbers flows.
// It keeps the process/track tables but no per-event state, so memory stays flat however long
// the run. With no sink attached every emit returns after one branch; callers that build args
// can skip that work with `if (recorder.enabled())`.
//
// Errors in use (an unknown pid, a duplicate tid, a span ending before it begins, an event on a
// track of the wrong kind) throw std::invalid_argument; they are checked only while enabled.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "syntorch/trace/event.hpp"
#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class Recorder {
 public:
  Recorder() = default;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  Recorder(Recorder&&) noexcept = default;
  Recorder& operator=(Recorder&&) noexcept = default;
  ~Recorder() = default;

  // Attaches a sink (not owned; it must outlive the recorder's use of it): calls its begin(),
  // then replays every process and track declared so far, so a late sink misses only events.
  void attach(Sink& sink);
  // Detaches a sink attached with attach(Sink&) and finishes it: a window of the run's events
  // (a profiler's). Throws std::invalid_argument when it is not attached.
  void detach(Sink& sink);
  // Attaches a sink that the recorder owns; returns it for later inspection.
  Sink& attach(std::unique_ptr<Sink> sink);

  // True while at least one sink is attached (and finish() has not run).
  bool enabled() const noexcept { return !sinks_.empty(); }

  // Declares a process (a rank or device). sort_index defaults to pid.
  void add_process(std::int32_t pid, std::string name, std::optional<std::int32_t> sort_index = {});
  // Declares a slice track in a declared process; tid must be unique within the pid.
  // sort_index defaults to the number of tracks already declared in the process.
  TrackId add_thread_track(std::int32_t pid, std::int32_t tid, std::string name,
                           std::optional<std::int32_t> sort_index = {});
  // Declares a counter track, e.g. ("HBM allocated", "bytes"); name unique within the pid.
  TrackId add_counter_track(std::int32_t pid, std::string name, std::string unit = {});

  const std::vector<ProcessInfo>& processes() const noexcept { return processes_; }
  const std::vector<TrackInfo>& tracks() const noexcept { return tracks_; }
  const TrackInfo& track(TrackId id) const;  // throws std::invalid_argument for unknown ids

  // A fresh flow id (1, 2, 3, ...), unique within this recorder.
  std::uint64_t next_flow_id() noexcept { return ++last_flow_id_; }

  // A complete slice on a thread track; end_ps >= begin_ps.
  void span(TrackId track, std::string_view name, std::string_view category, TimePs begin_ps,
            TimePs end_ps, std::span<const Arg> args = {}) {
    if (enabled()) emit(SpanEvent{track, name, category, begin_ps, end_ps, args});
  }
  void span(TrackId track, std::string_view name, std::string_view category, TimePs begin_ps,
            TimePs end_ps, std::initializer_list<Arg> args) {
    if (enabled()) emit(SpanEvent{track, name, category, begin_ps, end_ps, {args.begin(), args.size()}});
  }

  // A point event on a thread track.
  void instant(TrackId track, std::string_view name, std::string_view category, TimePs ts_ps,
               std::span<const Arg> args = {}) {
    if (enabled()) emit(InstantEvent{track, name, category, ts_ps, args});
  }
  void instant(TrackId track, std::string_view name, std::string_view category, TimePs ts_ps,
               std::initializer_list<Arg> args) {
    if (enabled()) emit(InstantEvent{track, name, category, ts_ps, {args.begin(), args.size()}});
  }

  // A sample of a counter track.
  void counter(TrackId track, TimePs ts_ps, double value) {
    if (enabled()) emit(CounterEvent{track, ts_ps, value});
  }

  // One endpoint of flow `flow_id` on a thread track; it binds to the slice enclosing ts_ps.
  void flow(FlowPhase phase, std::uint64_t flow_id, TrackId track, TimePs ts_ps,
            std::string_view name = "flow", std::string_view category = "flow") {
    if (enabled()) emit(FlowEvent{flow_id, phase, track, ts_ps, name, category});
  }
  void flow_begin(std::uint64_t flow_id, TrackId track, TimePs ts_ps) {
    flow(FlowPhase::kBegin, flow_id, track, ts_ps);
  }
  void flow_step(std::uint64_t flow_id, TrackId track, TimePs ts_ps) {
    flow(FlowPhase::kStep, flow_id, track, ts_ps);
  }
  void flow_end(std::uint64_t flow_id, TrackId track, TimePs ts_ps) {
    flow(FlowPhase::kEnd, flow_id, track, ts_ps);
  }

  // Calls finish() on every attached sink, in attach order, then detaches them all (the
  // recorder is disabled afterwards; owned sinks stay alive until the recorder is destroyed).
  void finish();

 private:
  void emit(const SpanEvent& e);
  void emit(const InstantEvent& e);
  void emit(const CounterEvent& e);
  void emit(const FlowEvent& e);
  void check_track(TrackId id, TrackKind kind, const char* what) const;

  std::vector<Sink*> sinks_;
  std::vector<std::unique_ptr<Sink>> owned_sinks_;
  std::vector<ProcessInfo> processes_;
  std::vector<TrackInfo> tracks_;
  std::map<std::int32_t, std::int32_t> tracks_per_pid_;                 // declared pids
  std::set<std::pair<std::int32_t, std::int32_t>> thread_keys_;        // (pid, tid)
  std::set<std::pair<std::int32_t, std::string>> counter_keys_;        // (pid, name)
  std::uint64_t last_flow_id_ = 0;
};

}  // namespace syntorch::trace
