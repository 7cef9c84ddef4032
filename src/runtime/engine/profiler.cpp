// Profiler windows: a rank's own trace events between two points of its program, in a trace
// file of their own and a summary table (torch.profiler.profile), attached to and detached from
// the run's recorder when the simulated host reaches those points.

#include <fmt/format.h>

#include "rank.hpp"
#include "syntorch/trace/open_trace_writer.hpp"

namespace syntorch::runtime::detail {

std::uint64_t Rank::trace_window_begin(const std::string& path) {
  if (!tracer_) throw std::logic_error("profiling: this run keeps no trace (start it with a trace or console output)");
  if (graph_.capturing()) throw std::logic_error("profiling: a profiler cannot start while a graph is being captured");
  TraceWindow& w = windows_.emplace_back();
  w.writer = trace::open_trace_writer(path, std::string("chrome"));
  w.summary = std::make_unique<trace::ConsoleSummary>(w.summary_text, 20);
  w.filter = std::make_unique<trace::ProcessFilter>(trace::pid_of_rank(index_),
                                                     std::vector<trace::Sink*>{w.writer.get(), w.summary.get()});
  w.open = true;
  os::HostAction a;
  a.set_note<&Rank::note_window_begin>(this, &w);
  queue_.push(a);  // not captured: the window is the program's, as its trace is
  return windows_.size();
}

std::string Rank::trace_window_end(std::uint64_t window) {
  if (window == 0 || window > windows_.size() || !windows_[window - 1].open) {
    throw std::invalid_argument(fmt::format("profiling: window {} is not open", window));
  }
  if (graph_.capturing()) throw std::logic_error("profiling: a profiler cannot stop while a graph is being captured");
  TraceWindow& w = windows_[window - 1];
  w.open = false;
  // As stopping a profiler does: the device finishes what was launched, then the trace closes.
  os::HostAction a;
  a.op = os::HostAction::Sync{};
  a.set_note<&Rank::note_window_end>(this, &w);
  queue_.push_and_wait(a);
  if (!w.error.empty()) throw std::runtime_error(w.error);
  std::string text = w.summary_text.str();
  w.writer.reset();
  w.summary.reset();
  w.filter.reset();
  return text;
}

void Rank::note_window_begin(const TraceWindow& w, const os::HostAction&, sim::TimePs, sim::TimePs) {
  tracer_->window_begin(*w.filter);
}

void Rank::note_window_end(const TraceWindow& w, const os::HostAction&, sim::TimePs, sim::TimePs) {
  try {
    tracer_->window_end(*w.filter);
  } catch (const std::exception& e) {
    const_cast<TraceWindow&>(w).error = e.what();  // the program's thread waits for this answer
  }
  queue_.answer(0);
}

}  // namespace syntorch::runtime::detail
