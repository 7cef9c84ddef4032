#pragma once
// Bandwidth resources (an HBM stack, one direction of a link, a switch port) shared by flows.
// A flow moves a number of bytes across a set of resources; at every moment the rates of all
// active flows are the max-min fair allocation (progressive filling, as SimGrid's flow model):
// no flow can get faster without slowing one that is no faster than it. A flow may carry its own
// rate cap (e.g. the bandwidth a kernel on a few SMs can draw), which acts as a private resource.
//
// Rates are recomputed when a flow starts or ends. Several changes at the same instant are folded
// into one recomputation, run by an event at that instant after the events already queued there.
// Max-min fairness decomposes over the connected components of flows sharing resources, so only
// the components the changes touch are refilled (the GPUs of one tensor-parallel group share
// nothing with another's). Progressing the flows and finding the next completion still walk
// every active flow, once per recomputation.
// Between changes every flow progresses linearly; one pending event marks the next completion
// (a rescheduled completion leaves the old event in the queue, stale, rather than cancelling it).
// Flow slots and their path storage are reused, so steady-state churn allocates nothing.

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "syntorch/sim/simulator.hpp"

namespace syntorch::sim {

using ResourceId = std::uint32_t;
using FlowId = std::uint32_t;

inline constexpr double kUnlimitedRate = std::numeric_limits<double>::infinity();

class FlowNetwork {
 public:
  explicit FlowNetwork(Simulator& sim) : sim_(sim) {}
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Adds a resource of `capacity_bytes_per_s` (> 0).
  ResourceId add_resource(std::string name, double capacity_bytes_per_s);

  // Starts moving `bytes` (>= 0) across `path` (each resource at most once). The flow's rate
  // never exceeds `rate_cap_bytes_per_s`. A flow with an empty path must have a finite cap.
  // When the last byte arrives, on_done(obj, arg) runs. Returns the flow's id, valid until then.
  FlowId start(std::span<const ResourceId> path, double bytes, EventFn on_done, void* obj,
               std::uint64_t arg = 0, double rate_cap_bytes_per_s = kUnlimitedRate);

  // Current rate of an active flow and its bytes still to move (as of now()).
  double rate(FlowId id) const { return flows_[id].rate; }
  double remaining_bytes(FlowId id) const;

  std::size_t active_flows() const { return active_.size(); }
  std::size_t resource_count() const { return resources_.size(); }
  const std::string& resource_name(ResourceId r) const { return resources_[r].name; }
  double capacity(ResourceId r) const { return resources_[r].capacity; }
  // Sum of the rates of the flows crossing r right now.
  double used_rate(ResourceId r) const { return resources_[r].used_rate; }
  // Active flows crossing r (started and not yet finished: a flow is off its resources before
  // the callbacks of its instant run).
  std::uint32_t flows_on(ResourceId r) const { return static_cast<std::uint32_t>(resources_[r].on.size()); }
  // Bytes that have crossed r since the start or the last clear_bytes_carried() (as of the last
  // rate change).
  double bytes_carried(ResourceId r) const { return resources_[r].bytes_carried; }
  void clear_bytes_carried(ResourceId r) { resources_[r].bytes_carried = 0; }
  std::uint64_t recomputations() const { return recomputations_; }
  // Flows whose rates recomputations have refilled, summed over them (the components' sizes).
  std::uint64_t flows_refilled() const { return flows_refilled_; }

  // Told after every recomputation of the rates (for traces): used_rate() is current then.
  using RateObserver = void (*)(void* obj);
  // The same, calling obj->Method().
  template <auto Method, class T>
  void set_observer(T* obj) {
    set_observer([](void* o) { (static_cast<T*>(o)->*Method)(); }, obj);
  }
  void set_observer(RateObserver fn, void* obj) {
    observer_ = fn;
    observer_obj_ = obj;
  }

 private:
  struct Resource {
    std::string name;
    double capacity = 0;
    double used_rate = 0;
    double bytes_carried = 0;
    std::vector<FlowId> on;   // the active flows crossing it
    std::uint32_t busy_index = 0;  // in busy_ while `on` is not empty
    // Scratch for progressive filling.
    double capacity_left = 0;
    std::uint32_t unfrozen_flows = 0;
    std::uint64_t seen = 0;  // the recomputation that last reached it
  };
  struct Flow {
    std::vector<ResourceId> path;  // capacity kept across reuse of the slot
    std::vector<std::uint32_t> on_index;  // per path entry: where the flow sits in that resource's `on`
    double remaining = 0;
    double rate = 0;
    double cap = kUnlimitedRate;
    EventFn on_done = nullptr;
    void* obj = nullptr;
    std::uint64_t arg = 0;
    std::uint32_t active_index = 0;
    bool frozen = false;
    std::uint64_t seen = 0;  // the recomputation that last reached it
  };

  void advance();              // progress every flow to now()
  void mark_dirty();           // schedule a recomputation at now(), once
  void recompute();            // the event: finish done flows, reshare, schedule next completion
  void reshare();              // progressive filling over the components that changed
  void schedule_next_completion();
  void on_completion_event(std::uint64_t version);

  Simulator& sim_;
  std::vector<Resource> resources_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_slots_;
  std::vector<FlowId> active_;
  std::vector<ResourceId> busy_;      // resources crossed by active flows
  std::vector<ResourceId> changed_;   // resources whose flows changed since the last reshare
  std::vector<FlowId> new_flows_;     // flows started since the last reshare
  std::vector<ResourceId> touched_;   // scratch: the resources of the components being refilled
  std::vector<FlowId> component_;     // scratch: their flows
  std::vector<FlowId> finished_;      // scratch: flows done in this recomputation
  TimePs last_advance_ps_ = 0;
  TimePs next_completion_ps_ = kTimeNever;  // when the pending completion event fires
  std::uint64_t completion_version_ = 0;     // events carrying an older version are stale
  bool recompute_pending_ = false;
  std::uint64_t recomputations_ = 0;
  std::uint64_t flows_refilled_ = 0;
  RateObserver observer_ = nullptr;
  void* observer_obj_ = nullptr;
};

}  // namespace syntorch::sim
