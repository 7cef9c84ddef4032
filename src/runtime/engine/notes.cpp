// What a rank shows in traces as its host actions run: op spans with flows to their device work,
// host-only ops and synchronisations, memory events, and model scopes, on the host track and
// around the device work they enclose on each stream.

#include <fmt/format.h>

#include "rank.hpp"

namespace syntorch::runtime::detail {

std::uint64_t Rank::begin_item(std::uint32_t stream, sim::TimePs now) {
  if (stream >= pending_flows_.size() || pending_flows_[stream].empty()) return 0;
  const Pending p = pending_flows_[stream].front();
  pending_flows_[stream].pop_front();
  slots_[stream].after_seq = p.after_seq;
  DeviceScopes& d = device_scopes_[stream];
  std::size_t same = 0;
  while (same < kScopeDepth && p.scopes[same] != nullptr && d.open[same] == p.scopes[same] &&
         d.instances[same] == p.instances[same]) {
    ++same;
  }
  close_scopes(stream, same);
  for (std::size_t i = same; i < kScopeDepth && p.scopes[i] != nullptr; ++i) {
    d.open[i] = p.scopes[i];
    d.instances[i] = p.instances[i];
    d.begin_ps[i] = now;
  }
  return p.flow_id;
}

void Rank::end_item(std::uint32_t stream, sim::TimePs end) {
  if (stream < device_scopes_.size()) device_scopes_[stream].last_end_ps = end;
}

void Rank::close_scopes(std::uint32_t stream, std::size_t from) {
  DeviceScopes& d = device_scopes_[stream];
  for (std::size_t i = kScopeDepth; i-- > from;) {
    if (d.open[i] == nullptr) continue;
    tracer_->scope_span(index_, stream, *d.open[i], d.begin_ps[i], std::max(d.begin_ps[i], d.last_end_ps));
    d.open[i] = nullptr;
  }
}

void Rank::close_all_scopes() {
  for (std::uint32_t s = 0; s < device_scopes_.size(); ++s) close_scopes(s, 0);
}

void Rank::hand_over_flow(std::uint32_t from, std::uint32_t to) {
  if (pending_flows_[from].empty()) return;
  Pending p = pending_flows_[from].front();
  pending_flows_[from].pop_front();
  p.after_seq = last_seq_[from];  // the computation the moved item waited for
  pending_flows_[to].push_back(p);
}

// The compute stream's wait for a receive, as a span after the receive's (Chakra needs it).
void Rank::trace_join(std::uint32_t stream, sim::TimePs begin, sim::TimePs end, std::uint64_t flow) {
  if (!trace_device_) return;
  std::uint64_t after = 0;
  if (!recv_seqs_.empty()) {
    after = recv_seqs_.front();
    recv_seqs_.pop_front();
  }
  last_seq_[stream] = tracer_->device_span(index_, stream, "wait for recv", "wait", begin, end, flow, {}, 0,
                                                trace::FlowPhase::kBegin, after);
}

// A host-only action (a view, a synchronisation, a sleep, a graph launch).
void Rank::note_span(const std::string& name, const os::HostAction& a, sim::TimePs begin, sim::TimePs end) {
  if (!tracer_) return;
  const bool sync = std::holds_alternative<os::HostAction::Sync>(a.op) || std::holds_alternative<os::HostAction::Wait>(a.op);
  const std::string_view category =
      sync ? "sync" : std::holds_alternative<os::HostAction::SleepUntil>(a.op) ? "sleep" : "op";
  tracer_->host_span(index_, name, category, begin, end);
}

// Launch i of n of one op: flows to the stream items; the op's span after the last.
void Rank::note_launch(const OpRecord& record, const os::HostAction& a, sim::TimePs begin, sim::TimePs end) {
  EngineTrace& t = *tracer_;
  const auto& of = std::get<os::HostAction::LaunchOf>(a.detail);
  if (of.index == 0) {
    op_begin_ps_ = begin;
    op_flows_.clear();
    op_flow_ps_.clear();
  }
  if (t.device_work()) {
    const std::uint64_t id = t.next_flow_id();
    Pending p;
    p.flow_id = id;
    for (std::size_t i = 0; i < scope_stack_.size() && i < kScopeDepth; ++i) {
      p.scopes[i] = scope_stack_[i].name;
      p.instances[i] = scope_stack_[i].instance;
    }
    pending_flows_[std::get<os::HostAction::Launch>(a.op).stream].push_back(p);
    op_flows_.push_back(id);
    op_flow_ps_.push_back(begin);
  }
  if (of.index + 1 == of.count) {
    t.op_span(index_, *record.name, record.shape, record.dtype, op_begin_ps_, end, op_flows_, op_flow_ps_);
  }
}

void Rank::note_memory(const std::string& name, const os::HostAction& a, sim::TimePs at, sim::TimePs) {
  const auto& m = std::get<os::HostAction::MemoryChange>(a.detail);
  tracer_->memory_event(index_, at, m.allocated, name, m.bytes, m.allocated_bytes, m.reserved_bytes, m.handle);
}

void Rank::note_scope_begin(const std::string& name, const os::HostAction&, sim::TimePs begin, sim::TimePs) {
  scope_stack_.push_back({&name, begin, ++scopes_opened_});
}

void Rank::note_scope_end(const os::HostAction&, sim::TimePs end, sim::TimePs) {
  if (scope_stack_.empty()) throw std::logic_error(fmt::format("rank {}: scope_end without scope_begin", index_));
  const auto [name, begin, instance] = scope_stack_.back();
  scope_stack_.pop_back();
  if (scope_stack_.empty()) {
    result_.steps.push_back({*name, begin, end, result_.communication_ps, result_.side_communication_ps,
                             result_.flops_by_op});
  }
  if (tracer_) tracer_->host_span(index_, *name, "scope", begin, end);
}

}  // namespace syntorch::runtime::detail
