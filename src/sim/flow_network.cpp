#include "syntorch/sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace syntorch::sim {

namespace {
// A flow is done when what is left would take under one picosecond at its rate, or is a
// rounding residue of the byte count.
bool is_done(double remaining, double rate) {
  return remaining <= 1e-6 || (rate > 0 && remaining <= rate * 1e-12);
}
}  // namespace

ResourceId FlowNetwork::add_resource(std::string name, double capacity_bytes_per_s) {
  if (!(capacity_bytes_per_s > 0) || !std::isfinite(capacity_bytes_per_s)) {
    throw std::invalid_argument("FlowNetwork: resource '" + name + "' needs a positive finite capacity");
  }
  Resource& res = resources_.emplace_back();
  res.name = std::move(name);
  res.capacity = capacity_bytes_per_s;
  return static_cast<ResourceId>(resources_.size() - 1);
}

FlowId FlowNetwork::start(std::span<const ResourceId> path, double bytes, EventFn on_done, void* obj,
                          std::uint64_t arg, double rate_cap_bytes_per_s) {
  if (!(bytes >= 0) || !std::isfinite(bytes)) throw std::invalid_argument("FlowNetwork: bytes must be finite and >= 0");
  if (!(rate_cap_bytes_per_s > 0)) throw std::invalid_argument("FlowNetwork: rate cap must be positive");
  if (path.empty() && !std::isfinite(rate_cap_bytes_per_s)) {
    throw std::invalid_argument("FlowNetwork: a flow with no resources needs a finite rate cap");
  }
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] >= resources_.size()) throw std::out_of_range("FlowNetwork: unknown resource id");
    for (std::size_t j = 0; j < i; ++j) {
      if (path[j] == path[i]) throw std::invalid_argument("FlowNetwork: a resource appears twice in one path");
    }
  }
  advance();
  FlowId id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.path.assign(path.begin(), path.end());
  f.remaining = bytes;
  f.rate = 0;
  f.cap = rate_cap_bytes_per_s;
  f.on_done = on_done;
  f.obj = obj;
  f.arg = arg;
  f.active_index = static_cast<std::uint32_t>(active_.size());
  active_.push_back(id);
  f.on_index.clear();
  for (ResourceId r : f.path) {
    Resource& res = resources_[r];
    if (res.on.empty()) {
      res.busy_index = static_cast<std::uint32_t>(busy_.size());
      busy_.push_back(r);
    }
    f.on_index.push_back(static_cast<std::uint32_t>(res.on.size()));
    res.on.push_back(id);
  }
  new_flows_.push_back(id);
  mark_dirty();
  return id;
}

double FlowNetwork::remaining_bytes(FlowId id) const {
  const Flow& f = flows_[id];
  const double elapsed_s = static_cast<double>(sim_.now() - last_advance_ps_) * 1e-12;
  return std::max(0.0, f.remaining - f.rate * elapsed_s);
}

void FlowNetwork::advance() {
  const TimePs now = sim_.now();
  if (now == last_advance_ps_) return;
  const double dt_s = static_cast<double>(now - last_advance_ps_) * 1e-12;
  for (FlowId id : active_) {
    Flow& f = flows_[id];
    f.remaining = std::max(0.0, f.remaining - f.rate * dt_s);
  }
  for (ResourceId r : busy_) resources_[r].bytes_carried += resources_[r].used_rate * dt_s;  // only these carry flows
  last_advance_ps_ = now;
}

void FlowNetwork::mark_dirty() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  sim_.at<&FlowNetwork::recompute>(sim_.now(), this);
}

void FlowNetwork::on_completion_event(std::uint64_t version) {
  if (version != completion_version_) return;  // superseded by a later reschedule
  next_completion_ps_ = kTimeNever;
  recompute();
}

void FlowNetwork::recompute() {
  recompute_pending_ = false;
  advance();
  // Retire finished flows (zero-byte flows finish here, at their start time).
  finished_.clear();
  for (std::size_t i = 0; i < active_.size();) {
    Flow& f = flows_[active_[i]];
    if (is_done(f.remaining, f.rate)) {
      finished_.push_back(active_[i]);
      // Off its resources now: the component it leaves is refilled without it.
      for (std::size_t k = 0; k < f.path.size(); ++k) {
        const ResourceId r = f.path[k];
        Resource& res = resources_[r];
        // The last flow on the resource takes this one's place (and learns where it now sits).
        const std::uint32_t at = f.on_index[k];
        const FlowId moved = res.on.back();
        res.on[at] = moved;
        res.on.pop_back();
        if (moved != active_[i]) {
          Flow& m = flows_[moved];
          for (std::size_t j = 0; j < m.path.size(); ++j) {
            if (m.path[j] == r) m.on_index[j] = at;
          }
        }
        changed_.push_back(r);
        if (res.on.empty()) {
          res.used_rate = 0;
          const ResourceId last = busy_.back();
          busy_[res.busy_index] = last;
          resources_[last].busy_index = res.busy_index;
          busy_.pop_back();
        }
      }
      const FlowId moved = active_.back();
      active_[i] = moved;
      flows_[moved].active_index = static_cast<std::uint32_t>(i);
      active_.pop_back();
    } else {
      ++i;
    }
  }
  reshare();
  schedule_next_completion();
  if (observer_) observer_(observer_obj_);
  // Callbacks last: they may start new flows, which marks the network dirty again.
  for (FlowId id : finished_) {
    Flow& f = flows_[id];
    f.rate = 0;
    const EventFn fn = f.on_done;
    void* obj = f.obj;
    const std::uint64_t arg = f.arg;
    free_slots_.push_back(id);
    if (fn) fn(obj, arg);
  }
}

void FlowNetwork::reshare() {
  ++recomputations_;
  const std::uint64_t stamp = recomputations_;
  // The components the changes touch: from the resources whose flows changed and the new flows,
  // every flow on a reached resource and every resource on a reached flow.
  touched_.clear();
  component_.clear();
  auto reach_flow = [&](FlowId id) {
    Flow& f = flows_[id];
    if (f.seen == stamp) return;
    f.seen = stamp;
    component_.push_back(id);
  };
  auto reach_resource = [&](ResourceId r) {
    Resource& res = resources_[r];
    if (res.seen == stamp) return;
    res.seen = stamp;
    touched_.push_back(r);
  };
  for (FlowId id : new_flows_) {
    if (flows_[id].active_index < active_.size() && active_[flows_[id].active_index] == id) reach_flow(id);
  }
  for (ResourceId r : changed_) reach_resource(r);
  new_flows_.clear();
  changed_.clear();
  for (std::size_t fi = 0, ri = 0; fi < component_.size() || ri < touched_.size();) {
    if (ri < touched_.size()) {
      for (FlowId id : resources_[touched_[ri++]].on) reach_flow(id);
    } else {
      for (ResourceId r : flows_[component_[fi++]].path) reach_resource(r);
    }
  }
  for (ResourceId r : touched_) {
    Resource& res = resources_[r];
    res.used_rate = 0;
    res.unfrozen_flows = static_cast<std::uint32_t>(res.on.size());
    res.capacity_left = res.capacity;
  }
  flows_refilled_ += component_.size();
  for (FlowId id : component_) {
    Flow& f = flows_[id];
    f.rate = 0;
    f.frozen = false;
  }
  // Progressive filling: raise every unfrozen flow's rate together until a resource saturates
  // or a flow reaches its cap; freeze those flows; repeat.
  std::size_t unfrozen = component_.size();
  double level = 0;
  while (unfrozen > 0) {
    double delta = kUnlimitedRate;
    for (ResourceId r : touched_) {
      const Resource& res = resources_[r];
      if (res.unfrozen_flows > 0) delta = std::min(delta, res.capacity_left / res.unfrozen_flows);
    }
    for (FlowId id : component_) {
      const Flow& f = flows_[id];
      if (!f.frozen) delta = std::min(delta, f.cap - level);
    }
    level += delta;
    for (ResourceId r : touched_) {
      Resource& res = resources_[r];
      if (res.unfrozen_flows > 0) res.capacity_left -= delta * res.unfrozen_flows;
    }
    for (FlowId id : component_) {
      Flow& f = flows_[id];
      if (f.frozen) continue;
      bool saturated = std::isfinite(f.cap) && f.cap - level <= f.cap * 1e-12;
      for (ResourceId r : f.path) {
        const Resource& res = resources_[r];
        if (res.capacity_left <= res.capacity * 1e-12) saturated = true;
      }
      if (!saturated) continue;
      f.frozen = true;
      f.rate = level;
      --unfrozen;
      for (ResourceId r : f.path) --resources_[r].unfrozen_flows;
    }
  }
  for (FlowId id : component_) {
    const Flow& f = flows_[id];
    for (ResourceId r : f.path) resources_[r].used_rate += f.rate;
  }
}

void FlowNetwork::schedule_next_completion() {
  double earliest_s = kUnlimitedRate;
  for (FlowId id : active_) {
    const Flow& f = flows_[id];
    if (f.rate > 0) earliest_s = std::min(earliest_s, f.remaining / f.rate);
  }
  if (earliest_s == kUnlimitedRate) {
    ++completion_version_;  // any pending event is stale
    next_completion_ps_ = kTimeNever;
    return;
  }
  // Round up to whole picoseconds, but not for floating-point residue just above an integer.
  const double delay_ps = earliest_s * 1e12;
  if (delay_ps >= 1.8e19) throw std::overflow_error("FlowNetwork: a flow would finish beyond the 2^64 ps clock");
  const double nearest = std::round(delay_ps);
  const TimePs delay = static_cast<TimePs>(std::fabs(delay_ps - nearest) < 1e-3 ? nearest : std::ceil(delay_ps));
  const TimePs when = sim_.later(std::max<TimePs>(delay, 1));
  if (when == next_completion_ps_) return;  // the pending event is already right
  next_completion_ps_ = when;
  sim_.at<&FlowNetwork::on_completion_event>(when, this, ++completion_version_);
}

}  // namespace syntorch::sim
