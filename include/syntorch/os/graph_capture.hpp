#pragma once
// CUDA graph capture on one rank's host thread, as torch.cuda.graph records it: between begin()
// and end(), the actions the program issues are recorded instead of issued, at no host cost (a
// captured launch is not a launch call); end() issues the graph launch, whose host cost stands
// for all of them, and then the recorded work, which reaches the device streams together.
// Invariant: no nested capture; a synchronisation inside a capture is an error (as in CUDA).

#include <stdexcept>
#include <vector>

#include "syntorch/os/host_thread.hpp"

namespace syntorch::os {

class GraphCapture {
 public:
  bool capturing() const { return capturing_; }

  void begin() {
    if (capturing_) throw std::logic_error("graph capture already in progress");
    capturing_ = true;
    captured_.clear();
  }

  // Records `action` (its host time dropped) when capturing; false otherwise.
  bool record(const HostAction& action) {
    if (!capturing_) return false;
    captured_.push_back(action);
    captured_.back().host_ps = 0;
    return true;
  }

  // Ends the capture and keeps what it recorded as a graph; returns its id (from 1).
  std::uint64_t end() {
    if (!capturing_) throw std::logic_error("graph_end without graph_begin");
    capturing_ = false;
    graphs_.push_back(std::move(captured_));
    captured_ = {};
    return graphs_.size();
  }

  // Issues graph `id`: `issue` receives the graph launch, then the recorded actions in order.
  template <class Issue>
  void launch(std::uint64_t id, const HostAction& graph_launch, Issue&& issue) const {
    if (id == 0 || id > graphs_.size()) throw std::logic_error("graph_launch of an unknown graph");
    issue(graph_launch);
    for (const HostAction& a : graphs_[id - 1]) issue(a);
  }

 private:
  bool capturing_ = false;
  std::vector<HostAction> captured_;
  std::vector<std::vector<HostAction>> graphs_;  // kept for the run: a graph may be replayed any time
};

}  // namespace syntorch::os
