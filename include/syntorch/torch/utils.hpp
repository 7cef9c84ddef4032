#pragma once
// RAII guards of the torch layer: gradient-mode guards (NoGradGuard, InferenceMode: no backward
// nodes are recorded in their scope), trace scopes for model structure, and the memory-purpose
// guard that says what new allocations are for (weights, KV cache, activations).

#include <string_view>

#include "syntorch/torch/autograd.hpp"

#include "syntorch/os/caching_allocator.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch {

// libtorch's NoGradGuard and InferenceMode: no backward is recorded in their scope
// (InferenceMode(false) leaves grad mode as it was).
using NoGradGuard = autograd::NoGradGuard;
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true) : previous_(autograd::GradMode::is_enabled()) {
    if (enabled) autograd::GradMode::set_enabled(false);
  }
  ~InferenceMode() { autograd::GradMode::set_enabled(previous_); }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool previous_;
};

// A named scope of the rank's host program for its lifetime (a layer, a generation step), like
// libtorch's RECORD_FUNCTION. Nothing outside a simulation.
class RecordScope {
 public:
  explicit RecordScope(std::string_view name);
  ~RecordScope();
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  runtime::RankContext* context_;
};

// What tensors allocated on this thread are for (activations unless a guard says otherwise).
// Module constructors put their parameters under weights themselves; a model puts its KV cache
// under kv_cache: { torch::MemoryUseGuard g(torch::MemoryUse::kv_cache); cache = torch::empty(...); }
using MemoryUse = os::MemoryUse;

// syntorch extension: an uninitialised parameter, counted under weights and named `what` (e.g.
// "ColumnParallelLinear.weight") in memory reports. What the built-in modules use; layers
// written outside the torch layer use it for theirs.
Tensor parameter_tensor(IntArrayRef sizes, ScalarType dtype, std::string_view what);
using MemoryUseGuard = runtime::MemoryUseGuard;

// syntorch extension: host-only work in its scope (host tensors' ops, their copies) runs in another
// process and costs this rank's host nothing, as a DataLoader's workers load and collate batches.
class HostWorkElsewhereGuard {
 public:
  HostWorkElsewhereGuard();
  ~HostWorkElsewhereGuard();
  HostWorkElsewhereGuard(const HostWorkElsewhereGuard&) = delete;
  HostWorkElsewhereGuard& operator=(const HostWorkElsewhereGuard&) = delete;

 private:
  runtime::RankContext* context_;
  bool previous_ = false;
};

}  // namespace syntorch::torch
