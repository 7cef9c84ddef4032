// A rank's host clock, as its program sees it: the time when the host reaches a call (the
// program waits for the simulator to get there), a sleep until a time, when an event completed
// (if it had by then) and whether a stream is idle. Every answer comes from the simulation at
// that point of the program, so the same inputs give the same answers and the same run. Each
// reading costs the host time, as it does on a real one, so a loop that polls goes forward.

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "rank.hpp"

namespace syntorch::runtime::detail {

namespace {
// What reading the host clock costs the host: a vDSO clock_gettime and the call around it.
constexpr sim::TimePs kClockReadPs = 100'000;
}  // namespace

// ---- the program's side ----

double Rank::host_time_s() {
  if (graph_.capturing()) throw std::logic_error("host_time_s: the host clock cannot be read while capturing a graph");
  os::HostAction a;
  a.host_ps = kClockReadPs;
  a.set_note<&Rank::note_clock>(this);
  return static_cast<double>(queue_.push_and_wait(a)) * 1e-12;
}

void Rank::sleep_until_s(double time_s) {
  if (!std::isfinite(time_s) || time_s < 0 || time_s > kMaxSleepUntilS) {
    throw std::invalid_argument(
        fmt::format("sleep_until_s: expected seconds from the run's start, 0 .. {:g}, got {}", kMaxSleepUntilS, time_s));
  }
  if (graph_.capturing()) throw std::logic_error("sleep_until_s: the host cannot sleep while capturing a graph");
  os::HostAction a;
  a.op = os::HostAction::SleepUntil{static_cast<sim::TimePs>(std::llround(time_s * 1e12))};
  if (tracer_) a.set_note<&Rank::note_span>(this, intern("sleep"));
  push(a);
}

double Rank::event_time_s(std::uint64_t event) {
  if (event > events_recorded_) throw std::invalid_argument(fmt::format("event_time_s: no event {} was recorded", event));
  if (graph_.capturing()) throw std::logic_error("cudaEventQuery: cannot query an event while capturing a graph");
  if (event == 0) return 0;
  queried_ = event;
  os::HostAction a;
  a.host_ps = core_.costs.launch_ps;  // a CUDA API call, as cudaEventRecord costs
  a.set_note<&Rank::note_event_time>(this, &queried_);
  const sim::TimePs done = queue_.push_and_wait(a);
  return done == kNotDone ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(done) * 1e-12;
}

bool Rank::stream_idle(std::uint32_t stream) {
  check_stream(stream, "stream_idle");
  if (graph_.capturing()) throw std::logic_error("cudaStreamQuery: cannot query a stream while capturing a graph");
  queried_ = stream;
  os::HostAction a;
  a.host_ps = core_.costs.launch_ps;  // a CUDA API call
  a.set_note<&Rank::note_stream_idle>(this, &queried_);
  return queue_.push_and_wait(a) != 0;
}

// ---- the simulator's side ----

void Rank::note_clock(const os::HostAction&, sim::TimePs at, sim::TimePs) { queue_.answer(at); }

void Rank::note_event_time(const std::uint64_t& event, const os::HostAction&, sim::TimePs, sim::TimePs) {
  queue_.answer(event_done(event) ? event_done_ps_[event] : kNotDone);
}

void Rank::note_stream_idle(const std::uint64_t& stream, const os::HostAction&, sim::TimePs, sim::TimePs) {
  queue_.answer(streams_[stream]->idle() ? 1 : 0);
}

}  // namespace syntorch::runtime::detail
