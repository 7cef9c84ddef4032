#include "trace.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace syntorch::runtime::detail {

namespace {
constexpr std::int32_t kInterconnectPid = 1 << 20;  // after every rank
constexpr std::int32_t kMemoryTid = 1000;

// Room for a span's args on the stack (Arg has no default).
template <std::size_t N, std::size_t... I>
std::array<trace::Arg, N> blank_args(std::index_sequence<I...>) {
  return {((void)I, trace::Arg{std::string_view{}, false})...};
}
}  // namespace

void EngineTrace::declare_rank(int rank, const std::string& device_name, std::size_t streams) {
  if (ranks_.size() <= static_cast<std::size_t>(rank)) ranks_.resize(static_cast<std::size_t>(rank) + 1);
  RankTracks& t = ranks_[static_cast<std::size_t>(rank)];
  t.declared = true;
  recorder_.add_process(trace::pid_of_rank(rank), fmt::format("rank {} ({})", rank, device_name));
  // Thread ids from 1: Perfetto reads tid 0 as the idle task.
  t.host = recorder_.add_thread_track(trace::pid_of_rank(rank), 1, "host: torch ops");
  t.compute_streams = streams;
  if (device_work()) {
    for (std::size_t s = 0; s < streams; ++s) {
      t.streams.push_back(recorder_.add_thread_track(trace::pid_of_rank(rank), static_cast<std::int32_t>(s + 2), fmt::format("stream {}", s)));
    }
  }
  if (memory()) {
    t.memory = recorder_.add_thread_track(trace::pid_of_rank(rank), kMemoryTid, "memory: alloc/free");
    t.allocated = recorder_.add_counter_track(trace::pid_of_rank(rank), "HBM allocated", "bytes");
    t.reserved = recorder_.add_counter_track(trace::pid_of_rank(rank), "HBM reserved", "bytes");
  }
  if (hardware()) {
    t.units = recorder_.add_counter_track(trace::pid_of_rank(rank), "SMs in use", "units");
    t.hbm = recorder_.add_counter_track(trace::pid_of_rank(rank), "HBM bandwidth", "bytes/s");
  }
}

EngineTrace::RankTracks& EngineTrace::tracks(int rank) {
  if (static_cast<std::size_t>(rank) >= ranks_.size() || !ranks_[static_cast<std::size_t>(rank)].declared) {
    throw std::logic_error(fmt::format("trace: rank {} has no tracks (it is not among the ranks traced)", rank));
  }
  return ranks_[static_cast<std::size_t>(rank)];
}

trace::TrackId EngineTrace::stream_track(int rank, std::uint32_t stream) {
  RankTracks& t = tracks(rank);
  while (t.streams.size() <= stream) {
    // Past the compute streams: the send and receive streams, declared when first used.
    const std::size_t s = t.streams.size();
    const std::size_t extra = s - t.compute_streams;
    const std::string name = extra == 0 ? "stream: sends" : extra == 1 ? "stream: receives" : fmt::format("stream {}", s);
    t.streams.push_back(recorder_.add_thread_track(trace::pid_of_rank(rank), static_cast<std::int32_t>(s + 2), name));
  }
  return t.streams[stream];
}

trace::TrackId EngineTrace::declare_link(const std::string& name) {
  if (!interconnect_declared_) {
    recorder_.add_process(kInterconnectPid, "interconnect");
    interconnect_declared_ = true;
  }
  return recorder_.add_counter_track(kInterconnectPid, name, "bytes/s");
}

void EngineTrace::host_span(int rank, std::string_view name, std::string_view category, sim::TimePs begin_ps,
                            sim::TimePs end_ps, std::span<const trace::Arg> args) {
  recorder_.span(tracks(rank).host, name, category, begin_ps, end_ps, args);
}

void EngineTrace::op_span(int rank, std::string_view name, std::string_view shape, std::string_view dtype,
                          sim::TimePs begin_ps, sim::TimePs end_ps, std::span<const std::uint64_t> flow_ids,
                          std::span<const sim::TimePs> flow_ps) {
  const trace::TrackId host = tracks(rank).host;
  for (std::size_t i = 0; i < flow_ids.size(); ++i) recorder_.flow_begin(flow_ids[i], host, flow_ps[i]);
  const trace::Arg args[] = {{"shape", shape}, {"dtype", dtype}};
  const std::size_t n = shape.empty() ? 0 : dtype.empty() ? 1 : 2;
  recorder_.span(host, name, "op", begin_ps, end_ps, std::span<const trace::Arg>(args, n));
}

std::uint64_t EngineTrace::device_span(int rank, std::uint32_t stream, std::string_view name,
                                       std::string_view category, sim::TimePs begin_ps, sim::TimePs end_ps,
                                       std::uint64_t flow_id, std::span<const trace::Arg> args,
                                       std::uint64_t member_flow_id, trace::FlowPhase member_phase,
                                       std::uint64_t after_seq) {
  const trace::TrackId track = stream_track(rank, stream);
  const std::uint64_t seq = ++tracks(rank).device_spans;
  if (flow_id != 0) recorder_.flow_end(flow_id, track, begin_ps);
  if (member_flow_id != 0) recorder_.flow(member_phase, member_flow_id, track, begin_ps, "collective", "flow");
  constexpr std::size_t kMaxArgs = 16;
  std::array<trace::Arg, kMaxArgs> all = blank_args<kMaxArgs>(std::make_index_sequence<kMaxArgs>{});
  std::size_t n = 0;
  for (const trace::Arg& a : args) {
    if (n + 2 < kMaxArgs) all[n++] = a;
  }
  if (after_seq != 0) all[n++] = {"after", after_seq};
  recorder_.span(track, name, category, begin_ps, end_ps, std::span<const trace::Arg>(all.data(), n));
  return seq;
}

void EngineTrace::scope_span(int rank, std::uint32_t stream, std::string_view name, sim::TimePs begin_ps,
                             sim::TimePs end_ps) {
  recorder_.span(stream_track(rank, stream), name, "scope", begin_ps, end_ps);
}

void EngineTrace::memory_event(int rank, sim::TimePs at_ps, bool allocate, std::string_view what, std::uint64_t bytes,
                               std::uint64_t allocated_bytes, std::uint64_t reserved_bytes, std::uint64_t id) {
  RankTracks& t = tracks(rank);
  // Alloc or free: the category says which. (`id` pairs them in this layer; traces pair an alloc
  // with its free by tensor name and size, which keeps .pftrace files a quarter of the JSON.)
  (void)id;
  // Allocations (or frees) in one nanosecond become one instant ("x and 170 more"): viewers nest
  // zero-length events of the same time, and the frees at a program's end went 171 deep.
  MemoryInstant& m = t.pending_memory;
  if (m.count > 0 && (m.allocate != allocate || m.at_ps / 1000 != at_ps / 1000)) flush_memory(t);
  if (m.count == 0) {
    m.allocate = allocate;
    m.at_ps = at_ps;
    m.first.assign(what);
    m.bytes = 0;
  }
  ++m.count;
  m.bytes += bytes;
  recorder_.counter(t.allocated, at_ps, static_cast<double>(allocated_bytes));
  if (static_cast<double>(reserved_bytes) != t.last_reserved) {  // the cache changes size far less often
    t.last_reserved = static_cast<double>(reserved_bytes);
    recorder_.counter(t.reserved, at_ps, static_cast<double>(reserved_bytes));
  }
}

void EngineTrace::flush_memory(RankTracks& t) {
  MemoryInstant& m = t.pending_memory;
  if (m.count == 0) return;
  const std::string_view category = m.allocate ? "alloc" : "free";
  if (m.count == 1) {
    const trace::Arg args[] = {{"bytes", m.bytes}};
    recorder_.instant(t.memory, m.first, category, m.at_ps, args);
  } else {
    const trace::Arg args[] = {{"bytes", m.bytes}, {"tensors", std::uint64_t{m.count}}};
    recorder_.instant(t.memory, fmt::format("{} and {} more", m.first, m.count - 1), category, m.at_ps, args);
  }
  m.count = 0;
}

void EngineTrace::finish() {
  for (RankTracks& t : ranks_) flush_memory(t);
}

void EngineTrace::units_in_use(int rank, sim::TimePs at_ps, std::uint32_t units) {
  recorder_.counter(tracks(rank).units, at_ps, units);
}

void EngineTrace::hbm_rate(int rank, sim::TimePs at_ps, double bytes_per_s) {
  recorder_.counter(tracks(rank).hbm, at_ps, bytes_per_s);
}

void EngineTrace::link_rate(trace::TrackId track, sim::TimePs at_ps, double bytes_per_s) {
  recorder_.counter(track, at_ps, bytes_per_s);
}

}  // namespace syntorch::runtime::detail
