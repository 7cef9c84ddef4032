// GradScaler: the kernels and host syncs of PyTorch's loss scaling, per optimizer and step.

#include "syntorch/torch/amp.hpp"

#include "internal.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch::amp {

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  if (!(options_.init_scale_ > 0)) detail::fail("GradScaler: init_scale must be positive, got {}", options_.init_scale_);
  if (!(options_.growth_factor_ > 1)) {
    detail::fail("GradScaler: The growth factor must be > 1.0, got {}", options_.growth_factor_);
  }
  if (!(options_.backoff_factor_ > 0 && options_.backoff_factor_ < 1)) {
    detail::fail("GradScaler: The backoff factor must be < 1.0 and > 0, got {}", options_.backoff_factor_);
  }
  if (options_.growth_interval_ < 1) {
    detail::fail("GradScaler: growth_interval must be a positive integer, got {}", options_.growth_interval_);
  }
}

void GradScaler::check_scale(const char* op) const {
  if (!scale_.defined()) {
    detail::fail("GradScaler.{}: Attempted {} but the scale is not set: call scale() on the loss first", op, op);
  }
}

GradScaler::PerOptimizer& GradScaler::state_of(const optim::Optimizer& optimizer) {
  for (PerOptimizer& p : per_optimizer_) {
    if (p.optimizer == &optimizer) return p;
  }
  per_optimizer_.push_back(PerOptimizer{&optimizer, Stage::ready, Tensor()});
  return per_optimizer_.back();
}

Tensor GradScaler::scale(const Tensor& outputs) {
  detail::check_defined(outputs, "GradScaler.scale", "outputs");
  if (!options_.enabled_) return outputs;
  if (!scale_.defined()) {
    autograd::NoGradGuard no_grad;
    scale_ = full({}, options_.init_scale_, kFloat32);
    growth_tracker_ = zeros({}, kInt32);
  }
  return outputs * scale_;
}

Tensor GradScaler::check_and_unscale(const optim::Optimizer& optimizer, const Tensor& inv_scale, bool allow_fp16) {
  std::vector<Tensor> grads;
  for (const Tensor& p : optimizer.parameters()) {
    if (!p.grad().defined()) continue;
    if (!allow_fp16 && p.grad().dtype() == kFloat16) {
      detail::fail("GradScaler.unscale_: Attempting to unscale FP16 gradients (keep the parameters in fp32 and run "
                   "the forward under autocast)");
    }
    grads.push_back(p.grad());
  }
  Tensor found_inf = zeros({}, kFloat32);
  _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  return found_inf;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled_) return;
  check_scale("unscale_");
  PerOptimizer& s = state_of(optimizer);
  if (s.stage == Stage::unscaled) {
    detail::fail("GradScaler.unscale_: unscale_() has already been called on this optimizer since the last update().");
  }
  if (s.stage == Stage::stepped) detail::fail("GradScaler.unscale_: unscale_() is being called after step().");
  autograd::NoGradGuard no_grad;
  // 1 / scale in double precision, back to fp32: one-element kernels.
  const Tensor inv_scale = (1.0 / scale_.to(kFloat64)).to(kFloat32);
  s.found_inf = check_and_unscale(optimizer, inv_scale, false);
  s.stage = Stage::unscaled;
}

void GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled_) {
    optimizer.step();
    return;
  }
  check_scale("step");
  PerOptimizer& s = state_of(optimizer);
  if (s.stage == Stage::stepped) detail::fail("GradScaler.step: step() has already been called since the last update().");
  if (optimizer.supports_amp_scaling()) {
    // The fused kernel unscales and skips on the device: the inf check runs with a unit scale
    // when unscale_() was not called, and the flag is summed on the device. No sync.
    autograd::NoGradGuard no_grad;
    if (s.stage == Stage::ready) s.found_inf = check_and_unscale(optimizer, ones({}, kFloat32), true);
    s.found_inf = s.found_inf + 0.0;  // Python's sum() over the per-device flags
    optimizer.step();
  } else {
    if (s.stage == Stage::ready) unscale_(optimizer);
    // The host reads the flag (a sync) to decide whether to step.
    (void)s.found_inf.item<float>();
    optimizer.step();
  }
  s.stage = Stage::stepped;
}

void GradScaler::update() {
  if (!options_.enabled_) return;
  check_scale("update");
  autograd::NoGradGuard no_grad;
  Tensor found;
  for (PerOptimizer& s : per_optimizer_) {
    if (!s.found_inf.defined()) continue;
    if (!found.defined()) {
      found = s.found_inf;
    } else {
      found.add_(s.found_inf);
    }
  }
  if (!found.defined()) detail::fail("GradScaler.update: No inf checks were recorded prior to update.");
  _amp_update_scale_(scale_, growth_tracker_, found, options_.growth_factor_, options_.backoff_factor_,
                     options_.growth_interval_);
  per_optimizer_.clear();
}

double GradScaler::get_scale() {
  if (!options_.enabled_) return 1.0;
  if (!scale_.defined()) return options_.init_scale_;
  (void)scale_.item<float>();
  return options_.init_scale_;  // values are not simulated: the scale never moves
}

}  // namespace syntorch::torch::amp
