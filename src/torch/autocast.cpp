// Autocast's per-thread state, its scope and the casts the listed ops apply to their inputs.

#include "syntorch/torch/autocast.hpp"

#include <unordered_map>

#include "internal.hpp"
#include "syntorch/torch/autograd.hpp"

namespace syntorch::torch::autocast {

namespace {

// Per rank program (each on its own thread), as PyTorch's thread-local autocast state.
thread_local State t_state;
thread_local int t_nesting = 0;
// Casts of fp32 leaves that require grad, by source (the source is held, so its address stays
// its own while cached): a weight used by several ops in a region is cast once.
struct CachedCast {
  Tensor source, cast;
  bool with_history;  // made with grad mode on (the cast records its backward)
};
// Per thread, as the state above; emptied when the outermost autocast region ends.
thread_local std::unordered_map<const detail::TensorImpl*, CachedCast> t_cache;

bool eligible(const Tensor& t) {
  if (!t.defined()) return false;
  const auto& s = detail::impl_of(t);
  // fp8 and fp4 tensors are Transformer Engine's to handle (its fp8 weights keep their type).
  return s.device.is_cuda() && is_floating_point(s.dtype) && s.dtype != kFloat64 && s.dtype != kFloat8_e4m3fn &&
         s.dtype != kFloat4;
}

}  // namespace

bool is_autocast_enabled() { return t_state.enabled; }
void set_autocast_enabled(bool enabled) { t_state.enabled = enabled; }
ScalarType get_autocast_dtype() { return t_state.dtype; }

void set_autocast_dtype(ScalarType dtype) {
  // float32 is accepted, as PyTorch's CUDA autocast accepts it (nanoGPT's --dtype=float32): the
  // listed ops then run in float32, so nothing is cast down.
  if (dtype != kFloat16 && dtype != kBFloat16 && dtype != kFloat32) {
    detail::fail("autocast: in the autocast enabled region for CUDA, the supported data types are torch.float16, "
                 "torch.bfloat16 and torch.float32, got {}",
                 scalar_type_name(dtype));
  }
  t_state.dtype = dtype;
}

bool is_autocast_cache_enabled() { return t_state.cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { t_state.cache_enabled = enabled; }
void clear_cache() { t_cache.clear(); }

AutocastMode::AutocastMode(ScalarType dtype, bool enabled, bool cache_enabled)
    : enabled_(t_state.enabled), cache_enabled_(t_state.cache_enabled), dtype_(t_state.dtype) {
  if (enabled) set_autocast_dtype(dtype);  // checked first: a refused dtype changes nothing
  t_state.enabled = enabled;
  t_state.cache_enabled = cache_enabled;
  ++t_nesting;
}

AutocastMode::~AutocastMode() {
  if (--t_nesting == 0) clear_cache();
  t_state = State{enabled_, dtype_, cache_enabled_};
}

State state() { return t_state; }
StateGuard::StateGuard(State state) : previous_(t_state) { t_state = state; }
StateGuard::~StateGuard() { t_state = previous_; }

Tensor cached_cast(ScalarType dtype, const Tensor& t) {
  if (!eligible(t) || t.dtype() == dtype) return t;
  const bool cacheable = t_state.cache_enabled && dtype == t_state.dtype && t.dtype() == kFloat32 &&
                         t.requires_grad() && t.is_leaf() && !detail::impl_of(t).base;
  if (!cacheable) return t.to(dtype);
  // A cast made with grad mode off has no history: a use with grad mode on (a checkpoint's
  // recomputation) makes it again, with one, and keeps that instead.
  const bool grad = autograd::GradMode::is_enabled();
  const auto found = t_cache.find(t.unsafe_get_impl());
  if (found != t_cache.end() && (found->second.with_history || !grad)) return found->second.cast;
  Tensor cast = t.to(dtype);
  t_cache.insert_or_assign(t.unsafe_get_impl(), CachedCast{t, cast, grad});
  return cast;
}

Tensor lower_precision(const Tensor& t) { return t_state.enabled ? cached_cast(t_state.dtype, t) : t; }
Tensor full_precision(const Tensor& t) { return t_state.enabled ? cached_cast(kFloat32, t) : t; }

std::optional<ScalarType> fp32_output_dtype(const Tensor& t, std::optional<ScalarType> dtype) {
  if (dtype || !t_state.enabled || !eligible(t) || t.dtype() == kFloat32) return dtype;
  return kFloat32;
}

}  // namespace syntorch::torch::autocast
