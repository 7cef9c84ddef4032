#pragma once
// A Sink that passes on the events of one process (a rank) to other sinks and drops the rest:
// one rank's own trace out of a run's shared recorder, as a per-process profiler records only
// its own process. Tracks of other processes are not declared to the targets.

#include <cstdint>
#include <vector>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class ProcessFilter final : public Sink {
 public:
  // The targets are not owned and must outlive the filter's use.
  ProcessFilter(std::int32_t pid, std::vector<Sink*> targets) : pid_(pid), targets_(std::move(targets)) {}

  void begin() override;
  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  void finish() override;

 private:
  bool passes(TrackId track) const { return track.index < passes_.size() && passes_[track.index]; }

  std::int32_t pid_;
  std::vector<Sink*> targets_;
  std::vector<bool> passes_;  // by TrackId::index
};

}  // namespace syntorch::trace
