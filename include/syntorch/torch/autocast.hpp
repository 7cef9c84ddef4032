#pragma once
// Automatic mixed precision as torch.autocast("cuda", dtype) runs it: in its scope, ops on
// autocast's lower-precision list (matmul, mm, bmm, addmm, linear, scaled_dot_product_attention)
// cast their floating inputs to the autocast dtype (one cast kernel each, an fp32 weight's cast
// made once per region and reused), ops on its fp32 list (layer_norm, nll_loss, exp, log,
// reciprocal) cast theirs to fp32, and softmax, log_softmax and sum write fp32. Every other op
// runs in its inputs' (promoted) dtype. The casts are recorded ops, so their backward casts the
// gradients back: fp32 parameters get fp32 gradients. Backward passes run with autocast off (as
// on CUDA, where the autograd engine runs them on its own thread); a checkpoint's recomputation
// restores the autocast state its forward ran under.

#include <optional>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::autocast {

// The state of this thread (each rank's program has its own): off, fp16, cache on by default.
bool is_autocast_enabled();
void set_autocast_enabled(bool enabled);
ScalarType get_autocast_dtype();
// fp16 or bf16 (torch.autocast accepts those on CUDA); anything else throws torch::Error.
void set_autocast_dtype(ScalarType dtype);
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
// Drops the cached weight casts (leaving the outermost autocast region does this).
void clear_cache();

// torch.autocast(device_type="cuda", dtype=..., enabled=..., cache_enabled=...) as a scope: sets
// the state for its lifetime and restores it after; leaving the outermost region clears the cache.
class AutocastMode {
 public:
  explicit AutocastMode(ScalarType dtype = kFloat16, bool enabled = true, bool cache_enabled = true);
  ~AutocastMode();
  AutocastMode(const AutocastMode&) = delete;
  AutocastMode& operator=(const AutocastMode&) = delete;

 private:
  bool enabled_, cache_enabled_;
  ScalarType dtype_;
};

// The state captured and restored as one (what a checkpoint's recomputation re-enters).
struct State {
  bool enabled = false;
  ScalarType dtype = kFloat16;
  bool cache_enabled = true;
};
State state();
class StateGuard {
 public:
  explicit StateGuard(State state);
  ~StateGuard();
  StateGuard(const StateGuard&) = delete;
  StateGuard& operator=(const StateGuard&) = delete;

 private:
  State previous_;
};

// What the casting ops apply to an input (at::autocast::cached_cast): a floating CUDA tensor in
// another dtype (not fp64, nor fp8 or fp4, which Transformer Engine's layers handle) is cast to `dtype` (a recorded aten::to); anything else is returned as it is. An
// fp32 leaf that requires grad cast to the autocast dtype is cast once per region (the cache).
Tensor cached_cast(ScalarType dtype, const Tensor& t);
// An input of a lower-precision-list op: cast to the autocast dtype when autocast is on.
Tensor lower_precision(const Tensor& t);
// An input of an fp32-list op: cast to fp32 when autocast is on.
Tensor full_precision(const Tensor& t);
// The output dtype of an op that takes one (softmax, log_softmax, sum): fp32 under autocast for a
// reduced-precision floating input when the caller gave none, else what the caller gave.
std::optional<ScalarType> fp32_output_dtype(const Tensor& t, std::optional<ScalarType> dtype);

}  // namespace syntorch::torch::autocast
