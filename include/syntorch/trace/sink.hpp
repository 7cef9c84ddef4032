#pragma once
// A consumer of trace events: a writer for one format (Chrome JSON, Perfetto protobuf, Chakra,
// CSV) or an aggregator (the console summary).
//
// Call order contract (the Recorder keeps it):
//   begin()                          once, first
//   on_process(p)                    before any track of p
//   on_track(t)                      before any event on t
//   on_span / on_instant / on_counter / on_flow   any number, interleaved with more declarations
//   finish()                         once, last: flushes and closes the output
// Track ids are dense small integers, so a sink can keep per-track state in a vector indexed by
// TrackId::index. Event structs are views valid only during the call.

#include "syntorch/trace/event.hpp"

namespace syntorch::trace {

class Sink {
 public:
  virtual ~Sink() = default;

  virtual void begin() {}
  virtual void on_process(const ProcessInfo& process) = 0;
  virtual void on_track(const TrackInfo& track) = 0;
  virtual void on_span(const SpanEvent& span) = 0;
  virtual void on_instant(const InstantEvent& instant) = 0;
  virtual void on_counter(const CounterEvent& counter) = 0;
  virtual void on_flow(const FlowEvent& flow) = 0;
  virtual void finish() {}

 protected:
  Sink() = default;
  Sink(const Sink&) = default;
  Sink& operator=(const Sink&) = default;
};

}  // namespace syntorch::trace
