// A rank's streams and events, as CUDA's: streams made by the program, event records that
// complete when their stream reaches them, stream waits that hold back later work until an
// event completes, and host synchronisation on an event or a stream.

#include <fmt/format.h>

#include "rank.hpp"

namespace syntorch::runtime::detail {

// ---- the program's side ----

void Rank::check_stream(std::uint32_t stream, std::string_view what) const {
  const bool compute = stream < core_.streams.compute;
  const bool made = stream >= core_.streams.total && stream < next_stream_;
  if (!compute && !made) {
    throw std::invalid_argument(fmt::format("{}: rank {} has no stream {} (streams: 0..{}{})", what, index_, stream,
                                            core_.streams.compute - 1,
                                            next_stream_ > core_.streams.total
                                                ? fmt::format(", {}..{}", core_.streams.total, next_stream_ - 1)
                                                : ""));
  }
}

std::uint32_t Rank::new_stream() {
  constexpr std::uint32_t kMaxStreams = 1024;  // per rank, as a bound on what a program may ask for
  if (next_stream_ >= kMaxStreams) {
    throw std::invalid_argument(fmt::format("new_stream: rank {} already has {} streams", index_, next_stream_));
  }
  const std::uint32_t id = next_stream_++;
  os::HostAction a;
  a.set_note<&Rank::note_new_stream>(this);
  a.detail = os::HostAction::StreamCreated{id};
  push(a);
  return id;
}

void Rank::set_stream(std::uint32_t stream) {
  check_stream(stream, "set_stream");
  current_stream_ = stream;
}

os::HostAction Rank::api_call(std::string_view name, os::WorkItem work, std::uint32_t stream) {
  os::HostAction a;
  a.op = os::HostAction::Launch{static_cast<std::uint16_t>(stream), core_.costs.latency_ps, work};
  a.host_ps = core_.costs.launch_ps;
  if (tracer_) a.set_note<&Rank::note_span>(this, intern(name));
  return a;
}

std::uint64_t Rank::record_event(std::uint32_t stream) {
  check_stream(stream, "record_event");
  const std::uint64_t event = ++events_recorded_;
  push(api_call("cudaEventRecord", os::work_item<&Rank::start_event_record>(this, event), stream));
  return event;
}

void Rank::wait_event(std::uint32_t stream, std::uint64_t event) {
  check_stream(stream, "wait_event");
  if (event > events_recorded_) throw std::invalid_argument(fmt::format("wait_event: no event {} was recorded", event));
  if (event == 0) return;  // an event never recorded: nothing to wait for (as in CUDA)
  push(api_call("cudaStreamWaitEvent", os::work_item<&Rank::start_event_wait>(this, event), stream));
}

void Rank::synchronize_event(std::uint64_t event) {
  if (event > events_recorded_) {
    throw std::invalid_argument(fmt::format("synchronize_event: no event {} was recorded", event));
  }
  if (graph_.capturing()) throw std::logic_error("cudaEventSynchronize: cannot synchronise while capturing a graph");
  if (event == 0) return;
  os::HostAction a;
  a.op = os::HostAction::Wait{0, os::work_item<&Rank::block_on_event>(this, event)};
  a.set_note<&Rank::note_span>(this, intern("cudaEventSynchronize"));
  push(a);
}

void Rank::synchronize_stream(std::uint32_t stream) {
  check_stream(stream, "synchronize_stream");
  if (graph_.capturing()) throw std::logic_error("cudaStreamSynchronize: cannot synchronise while capturing a graph");
  os::HostAction a;
  a.op = os::HostAction::Wait{static_cast<std::uint16_t>(stream), os::work_item<&Rank::block_on_stream>(this, 0)};
  a.set_note<&Rank::note_span>(this, intern("cudaStreamSynchronize"));
  push(a);
}

// ---- the simulator's side ----

void Rank::note_new_stream(const os::HostAction& a, sim::TimePs, sim::TimePs) {
  const std::uint32_t id = std::get<os::HostAction::StreamCreated>(a.detail).id;
  while (streams_.size() <= id) {
    streams_.push_back(std::make_unique<os::Stream>(core_.sim, device_, static_cast<std::uint32_t>(streams_.size())));
    host_thread_->add_stream(streams_.back().get());
  }
  slots_.resize(streams_.size());
  pending_flows_.resize(streams_.size());
  last_seq_.resize(streams_.size(), 0);
  device_scopes_.resize(streams_.size());
}

void Rank::start_event_record(std::uint64_t event, os::Stream& stream) {
  if (event_done_ps_.size() <= event) event_done_ps_.resize(event + 1, kNotDone);
  event_done_ps_[event] = core_.sim.now();
  if (auto it = event_waiters_.find(event); it != event_waiters_.end()) {
    for (std::uint32_t s : it->second) streams_[s]->finish_current();
    event_waiters_.erase(it);
  }
  if (host_event_ == event) {
    host_event_ = 0;
    host_thread_->release();
  }
  stream.finish_current();
}

void Rank::start_event_wait(std::uint64_t event, os::Stream& stream) {
  if (event_done(event)) {
    stream.finish_current();
  } else {
    event_waiters_[event].push_back(stream.index());
  }
}

void Rank::block_on_event(std::uint64_t event, os::Stream&) {
  if (event_done(event)) {
    host_thread_->release();
  } else {
    host_event_ = event;
  }
}

void Rank::block_on_stream(std::uint64_t, os::Stream& stream) {
  stream.notify_when_idle(sim::handler<&Rank::on_host_stream_idle>(), this, 0);
}

void Rank::on_host_stream_idle() { host_thread_->release(); }

}  // namespace syntorch::runtime::detail
