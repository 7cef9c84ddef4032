#pragma once
// What the Engine shows in a trace, by level: the torch ops and model scopes on each rank's host
// track (op); the kernels, collectives, sends and copies on its stream tracks, with flow arrows
// from each op to its device work and between the members of each collective, plus device
// memory (allocated/reserved counters, alloc/free instants naming the tensor) (kernel); and
// hardware activity as counters: SMs in use and HBM bandwidth per device, bandwidth on each link
// direction (hw). One process per rank; the links are in an "interconnect" process.
// Flow endpoints are emitted just before the span that encloses them, on the same track.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/runtime/engine.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::runtime::detail {

class EngineTrace {
 public:
  EngineTrace(trace::Recorder& recorder, TraceLevel level) : recorder_(recorder), level_(level) {}

  bool device_work() const { return level_ != TraceLevel::op; }
  bool memory() const { return level_ != TraceLevel::op; }
  bool hardware() const { return level_ == TraceLevel::hw; }
  std::uint64_t next_flow_id() { return recorder_.next_flow_id(); }

  // A rank's tracks. Only declared ranks are traced (EngineOptions::trace_ranks): each Rank knows
  // whether it is, and an event for an undeclared rank is a logic error.
  void declare_rank(int rank, const std::string& device_name, std::size_t streams);
  // A counter track for one bandwidth resource (a link direction), in the interconnect process.
  trace::TrackId declare_link(const std::string& name);

  // Host track.
  void host_span(int rank, std::string_view name, std::string_view category, sim::TimePs begin_ps, sim::TimePs end_ps,
                 std::span<const trace::Arg> args = {});
  // An op span with the flows to its device work starting inside it (one per launch, at `at_ps`).
  // The op's shape (its description) and dtype go in its args when known.
  void op_span(int rank, std::string_view name, std::string_view shape, std::string_view dtype, sim::TimePs begin_ps,
               sim::TimePs end_ps, std::span<const std::uint64_t> flow_ids, std::span<const sim::TimePs> flow_ps);

  // Stream tracks: device work, ending the flow from its op (flow_id 0: none). Device spans are
  // numbered per rank from 1 in the order they are emitted (the Chakra writer numbers its nodes
  // the same way); "after" names the number of work on another stream this one had to wait for
  // (a send waits for the computation before it; the wait for a receive waits for the receive),
  // which Chakra traces turn into dependencies. Returns the span's number.
  std::uint64_t device_span(int rank, std::uint32_t stream, std::string_view name, std::string_view category,
                            sim::TimePs begin_ps, sim::TimePs end_ps, std::uint64_t flow_id,
                            std::span<const trace::Arg> args, std::uint64_t member_flow_id = 0,
                            trace::FlowPhase member_phase = trace::FlowPhase::kBegin, std::uint64_t after_seq = 0);

  // A model scope (a step, a layer) around the device work launched inside it, on a stream.
  void scope_span(int rank, std::uint32_t stream, std::string_view name, sim::TimePs begin_ps, sim::TimePs end_ps);

  // Memory: counters after the change, and an instant naming the tensor.
  // `id` pairs an allocation with its free.
  void memory_event(int rank, sim::TimePs at_ps, bool allocate, std::string_view what, std::uint64_t bytes,
                    std::uint64_t allocated_bytes, std::uint64_t reserved_bytes, std::uint64_t id);

  // A window of the run's events in `sink` (a profiler's): attached now, detached (and finished)
  // at window_end. Only the simulator's thread calls these.
  void window_begin(trace::Sink& sink) { recorder_.attach(sink); }
  void window_end(trace::Sink& sink) { recorder_.detach(sink); }

  // Writes what is held back (memory instants of the last nanosecond); at the end of a run.
  void finish();

  // Hardware counters.
  void units_in_use(int rank, sim::TimePs at_ps, std::uint32_t units);
  void hbm_rate(int rank, sim::TimePs at_ps, double bytes_per_s);
  void link_rate(trace::TrackId track, sim::TimePs at_ps, double bytes_per_s);

 private:
  struct MemoryInstant {
    bool allocate = false;
    sim::TimePs at_ps = 0;
    std::uint32_t count = 0;
    std::uint64_t bytes = 0;
    std::string first;
  };
  struct RankTracks {
    trace::TrackId host, memory, allocated, reserved, units, hbm;
    std::vector<trace::TrackId> streams;
    std::size_t compute_streams = 0;
    std::uint64_t device_spans = 0;
    bool declared = false;
    double last_reserved = -1;
    MemoryInstant pending_memory;
  };
  void flush_memory(RankTracks& t);
  trace::TrackId stream_track(int rank, std::uint32_t stream);
  RankTracks& tracks(int rank);
  trace::Recorder& recorder_;
  TraceLevel level_;
  std::vector<RankTracks> ranks_;
  bool interconnect_declared_ = false;
  std::int32_t interconnect_pid_ = 0;
};

}  // namespace syntorch::runtime::detail
