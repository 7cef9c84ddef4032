#include "syntorch/trace/recorder.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>

namespace syntorch::trace {

void Recorder::attach(Sink& sink) {
  if (std::find(sinks_.begin(), sinks_.end(), &sink) != sinks_.end()) {
    throw std::invalid_argument("trace::Recorder::attach: sink is already attached");
  }
  sink.begin();
  for (const ProcessInfo& p : processes_) sink.on_process(p);
  for (const TrackInfo& t : tracks_) sink.on_track(t);
  sinks_.push_back(&sink);
}

void Recorder::detach(Sink& sink) {
  const auto it = std::find(sinks_.begin(), sinks_.end(), &sink);
  if (it == sinks_.end()) throw std::invalid_argument("trace::Recorder::detach: sink is not attached");
  sinks_.erase(it);
  sink.finish();
}

Sink& Recorder::attach(std::unique_ptr<Sink> sink) {
  if (!sink) throw std::invalid_argument("trace::Recorder::attach: null sink");
  Sink& ref = *sink;
  owned_sinks_.push_back(std::move(sink));
  attach(ref);
  return ref;
}

void Recorder::add_process(std::int32_t pid, std::string name, std::optional<std::int32_t> sort_index) {
  if (!tracks_per_pid_.emplace(pid, 0).second) {
    throw std::invalid_argument(fmt::format("trace::Recorder: process {} is already declared", pid));
  }
  processes_.push_back(ProcessInfo{pid, std::move(name), sort_index.value_or(pid)});
  for (Sink* s : sinks_) s->on_process(processes_.back());
}

TrackId Recorder::add_thread_track(std::int32_t pid, std::int32_t tid, std::string name,
                                   std::optional<std::int32_t> sort_index) {
  auto count = tracks_per_pid_.find(pid);
  if (count == tracks_per_pid_.end()) {
    throw std::invalid_argument(
        fmt::format("trace::Recorder: thread track '{}' names process {}, which is not declared", name, pid));
  }
  if (!thread_keys_.emplace(pid, tid).second) {
    throw std::invalid_argument(
        fmt::format("trace::Recorder: thread track '{}': tid {} is already used in process {}", name, tid, pid));
  }
  TrackInfo t;
  t.id = TrackId{static_cast<std::uint32_t>(tracks_.size())};
  t.kind = TrackKind::kThread;
  t.pid = pid;
  t.tid = tid;
  t.name = std::move(name);
  t.sort_index = sort_index.value_or(count->second);
  ++count->second;
  tracks_.push_back(std::move(t));
  for (Sink* s : sinks_) s->on_track(tracks_.back());
  return tracks_.back().id;
}

TrackId Recorder::add_counter_track(std::int32_t pid, std::string name, std::string unit) {
  auto count = tracks_per_pid_.find(pid);
  if (count == tracks_per_pid_.end()) {
    throw std::invalid_argument(
        fmt::format("trace::Recorder: counter track '{}' names process {}, which is not declared", name, pid));
  }
  if (!counter_keys_.emplace(pid, name).second) {
    throw std::invalid_argument(
        fmt::format("trace::Recorder: counter track '{}' is already declared in process {}", name, pid));
  }
  TrackInfo t;
  t.id = TrackId{static_cast<std::uint32_t>(tracks_.size())};
  t.kind = TrackKind::kCounter;
  t.pid = pid;
  t.tid = 0;
  t.name = std::move(name);
  t.unit = std::move(unit);
  t.sort_index = count->second;
  ++count->second;
  tracks_.push_back(std::move(t));
  for (Sink* s : sinks_) s->on_track(tracks_.back());
  return tracks_.back().id;
}

const TrackInfo& Recorder::track(TrackId id) const {
  if (id.index >= tracks_.size()) {
    throw std::invalid_argument(fmt::format("trace::Recorder: unknown track id {}", id.index));
  }
  return tracks_[id.index];
}

void Recorder::check_track(TrackId id, TrackKind kind, const char* what) const {
  if (id.index >= tracks_.size()) [[unlikely]] {
    throw std::invalid_argument(fmt::format("trace::Recorder: {} on unknown track id {}", what, id.index));
  }
  const TrackInfo& t = tracks_[id.index];
  if (t.kind != kind) [[unlikely]] {
    throw std::invalid_argument(fmt::format("trace::Recorder: {} on {} track '{}' (pid {})", what,
                                            t.kind == TrackKind::kCounter ? "counter" : "thread", t.name,
                                            t.pid));
  }
}

void Recorder::emit(const SpanEvent& e) {
  check_track(e.track, TrackKind::kThread, "span");
  if (e.end_ps < e.begin_ps) [[unlikely]] {
    throw std::invalid_argument(
        fmt::format("trace::Recorder: span '{}' ends at {} ps, before it begins at {} ps", e.name, e.end_ps,
                    e.begin_ps));
  }
  for (Sink* s : sinks_) s->on_span(e);
}

void Recorder::emit(const InstantEvent& e) {
  check_track(e.track, TrackKind::kThread, "instant");
  for (Sink* s : sinks_) s->on_instant(e);
}

void Recorder::emit(const CounterEvent& e) {
  check_track(e.track, TrackKind::kCounter, "counter sample");
  for (Sink* s : sinks_) s->on_counter(e);
}

void Recorder::emit(const FlowEvent& e) {
  check_track(e.track, TrackKind::kThread, "flow event");
  for (Sink* s : sinks_) s->on_flow(e);
}

void Recorder::finish() {
  // Detach first, and finish every sink even when one throws; the first error is rethrown.
  std::vector<Sink*> sinks = std::move(sinks_);
  sinks_.clear();
  std::exception_ptr first_error;
  for (Sink* s : sinks) {
    try {
      s->finish();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace syntorch::trace
