#include "syntorch/trace/process_filter.hpp"

#include "syntorch/trace/event.hpp"

namespace syntorch::trace {

void ProcessFilter::begin() {
  for (Sink* s : targets_) s->begin();
}

void ProcessFilter::on_process(const ProcessInfo& process) {
  if (process.pid != pid_) return;
  for (Sink* s : targets_) s->on_process(process);
}

void ProcessFilter::on_track(const TrackInfo& track) {
  if (passes_.size() <= track.id.index) passes_.resize(track.id.index + 1, false);
  passes_[track.id.index] = track.pid == pid_;
  if (track.pid != pid_) return;
  for (Sink* s : targets_) s->on_track(track);
}

void ProcessFilter::on_span(const SpanEvent& span) {
  if (!passes(span.track)) return;
  for (Sink* s : targets_) s->on_span(span);
}

void ProcessFilter::on_instant(const InstantEvent& instant) {
  if (!passes(instant.track)) return;
  for (Sink* s : targets_) s->on_instant(instant);
}

void ProcessFilter::on_counter(const CounterEvent& counter) {
  if (!passes(counter.track)) return;
  for (Sink* s : targets_) s->on_counter(counter);
}

void ProcessFilter::on_flow(const FlowEvent& flow) {
  if (!passes(flow.track)) return;
  for (Sink* s : targets_) s->on_flow(flow);
}

void ProcessFilter::finish() {
  for (Sink* s : targets_) s->finish();
}

}  // namespace syntorch::trace
