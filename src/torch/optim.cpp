// Optimizers: their steps as the foreach ops or the fused kernel PyTorch launches.

#include "syntorch/torch/optim.hpp"

#include "internal.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch::optim {

// A multi-tensor op over `list`: one op per (device, dtype) group, in order of first appearance,
// as PyTorch groups a foreach or fused step's tensors. `k` is the op's extra count (a foreach
// op's input lists, a fused SGD's momentum).
static void multi_tensor_op(runtime::OpKind kind, const std::vector<Tensor>& list, std::uint64_t k,
                            std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) return;
  std::vector<bool> done(list.size(), false);
  for (std::size_t first = 0; first < list.size(); ++first) {
    if (done[first]) continue;
    runtime::OpDesc op;
    op.kind = kind;
    op.dtype = to_runtime_dtype(list[first].dtype());
    op.k = k;
    op.batch = 0;  // tensors in the group
    std::int64_t elements = 0;
    for (std::size_t i = first; i < list.size(); ++i) {
      if (done[i] || list[i].dtype() != list[first].dtype() || list[i].device() != list[first].device()) continue;
      done[i] = true;
      elements += list[i].numel();
      ++op.batch;
    }
    op.elements = static_cast<std::uint64_t>(elements);
    detail::dispatch(ctx, op, aten, list[first].device(), elements == 0);
  }
}

// One _foreach_ op over `list` reading `inputs` lists; `out` (when given) receives a new list like
// `list` (torch._foreach_sqrt and the out-of-place ops).
static void foreach_op(const std::vector<Tensor>& list, int inputs, std::string_view aten,
                       std::vector<Tensor>* out = nullptr) {
  if (out) {
    runtime::RankContext* ctx = runtime::current_rank();
    out->clear();
    for (const Tensor& t : list) out->push_back(detail::make_tensor(ctx, t.sizes(), t.dtype(), t.device(), aten));
  }
  multi_tensor_op(runtime::OpKind::foreach, list, static_cast<std::uint64_t>(inputs), aten);
}

}  // namespace syntorch::torch::optim

namespace syntorch::torch {

namespace {
void check_lists(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* op) {
  if (a.size() != b.size()) detail::fail("{}: Tensor lists must have the same number of tensors, got {} and {}", op, a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].defined() || !b[i].defined()) detail::fail("{}: tensor {} is undefined", op, i);
    if (a[i].numel() != b[i].numel()) {
      detail::fail("{}: tensor {} has {} elements in one list and {} in the other", op, i, a[i].numel(), b[i].numel());
    }
  }
}
}  // namespace

void _foreach_add_(const std::vector<Tensor>& self, const std::vector<Tensor>& other) {
  check_lists(self, other, "_foreach_add_");
  optim::foreach_op(self, 2, "aten::_foreach_add_");
}

void _foreach_mul_(const std::vector<Tensor>& self, double) { optim::foreach_op(self, 1, "aten::_foreach_mul_"); }

void _foreach_copy_(const std::vector<Tensor>& self, const std::vector<Tensor>& src) {
  check_lists(self, src, "_foreach_copy_");
  optim::foreach_op(self, 1, "aten::_foreach_copy_");
}

std::vector<Tensor> _foreach_norm(const std::vector<Tensor>& self) {
  std::vector<Tensor> out;
  runtime::RankContext* ctx = runtime::current_rank();
  for (const Tensor& t : self) {
    detail::check_defined(t, "_foreach_norm", "self");
    out.push_back(detail::make_tensor(ctx, {}, kFloat32, t.device(), "aten::_foreach_norm"));
  }
  optim::foreach_op(self, 1, "aten::_foreach_norm");
  return out;
}

namespace {
void check_scalar(const Tensor& t, ScalarType dtype, const char* op, const char* arg) {
  detail::check_defined(t, op, arg);
  if (t.numel() != 1 || t.dtype() != dtype) {
    detail::fail("{}: expected {} to be a one-element {} tensor, got {} of {} elements", op, arg,
                 scalar_type_name(dtype), scalar_type_name(t.dtype()), t.numel());
  }
}

// One kernel over a one-element tensor (the scaler's bookkeeping).
void scalar_kernel(const Tensor& t, std::string_view aten) {
  detail::dispatch(runtime::current_rank(), detail::elementwise_op(runtime::OpKind::copy, 1, t.dtype()), aten,
                   t.device(), false);
}
}  // namespace

void _amp_foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& self, Tensor& found_inf,
                                                const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_scalar(found_inf, kFloat32, op, "found_inf");
  check_scalar(inv_scale, kFloat32, op, "inv_scale");
  for (const Tensor& t : self) {
    detail::check_defined(t, op, "self");
    if (!t.is_floating_point()) detail::fail("{}: expected floating-point gradients, got {}", op, scalar_type_name(t.dtype()));
  }
  optim::foreach_op(self, 1, "aten::_amp_foreach_non_finite_check_and_unscale_");
}

Tensor& _amp_update_scale_(Tensor& self, Tensor& growth_tracker, const Tensor& found_inf, double scale_growth_factor,
                           double scale_backoff_factor, std::int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_scalar(self, kFloat32, op, "self");
  check_scalar(growth_tracker, kInt32, op, "growth_tracker");
  check_scalar(found_inf, kFloat32, op, "found_inf");
  if (scale_growth_factor <= 1 || scale_backoff_factor <= 0 || scale_backoff_factor >= 1 || growth_interval < 1) {
    detail::fail("{}: expected growth factor > 1, backoff factor in (0, 1) and growth interval >= 1, got {}, {}, {}",
                 op, scale_growth_factor, scale_backoff_factor, growth_interval);
  }
  scalar_kernel(self, "aten::_amp_update_scale_");
  return self;
}

namespace nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  if (max_norm < 0) detail::fail("clip_grad_norm_: max_norm must be non-negative, got {}", max_norm);
  if (norm_type != 2.0) detail::fail("clip_grad_norm_: only the 2-norm is modelled, got norm_type {}", norm_type);
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    detail::check_defined(p, "clip_grad_norm_", "parameters");
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return zeros({}, kFloat32);
  // Each group's norms (one kernel per dtype), stacked, and the norm of those.
  std::vector<Tensor> norms = _foreach_norm(grads);
  Tensor stacked = stack(norms);
  runtime::RankContext* ctx = runtime::current_rank();
  Tensor total = detail::make_tensor(ctx, {}, kFloat32, stacked.device(), "aten::linalg_vector_norm");
  {
    runtime::OpDesc o;
    o.kind = runtime::OpKind::sum;
    o.dtype = DType::fp32;
    o.rows = 1;
    o.cols = static_cast<std::uint64_t>(stacked.numel());
    detail::dispatch(ctx, o, "aten::linalg_vector_norm", stacked.device(), false);
  }
  // max_norm / (total + 1e-6), clamped to 1, then every gradient scaled by it.
  Tensor coef = clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  _foreach_mul_(grads, 1.0);  // by coef: the scalar overload's kernel costs the same (values are not simulated)
  return total;
}

}  // namespace nn::utils

}  // namespace syntorch::torch

namespace syntorch::torch::optim {

Optimizer::Optimizer(std::vector<Tensor> params, const char* name) : params_(std::move(params)) {
  if (params_.empty()) detail::fail("{}: optimizer got an empty parameter list", name);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) detail::fail("{}: parameter {} is undefined", name, i);
    if (!params_[i].is_leaf()) detail::fail("{}: can't optimize a non-leaf Tensor (parameter {})", name, i);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  std::vector<Tensor> grads;
  for (Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad() = Tensor();
    } else {
      grads.push_back(p.grad());
    }
  }
  foreach_op(grads, 1, "aten::_foreach_zero_");
}

std::uint64_t Optimizer::state_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& slot : state_) {
    for (const Tensor& t : slot) bytes += t.defined() ? t.storage_nbytes() : 0;
  }
  return bytes;
}

Optimizer::Stepped Optimizer::with_grad() const {
  Stepped s;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    s.index.push_back(i);
    s.params.push_back(params_[i]);
    s.grads.push_back(params_[i].grad());
  }
  return s;
}

std::vector<Tensor> Optimizer::state(std::size_t slot, const Stepped& stepped) {
  if (state_.size() <= slot) state_.resize(slot + 1);
  std::vector<Tensor>& all = state_[slot];
  all.resize(params_.size());
  std::vector<Tensor> out;
  runtime::MemoryUseGuard use(os::MemoryUse::optimizer_state);
  for (std::size_t i : stepped.index) {
    if (!all[i].defined()) all[i] = zeros_like(params_[i]);
    out.push_back(all[i]);
  }
  return out;
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params), "SGD"), options_(options) {
  if (options_.lr_ < 0) detail::fail("SGD: Invalid learning rate: {}", options_.lr_);
  if (options_.momentum_ < 0) detail::fail("SGD: Invalid momentum value: {}", options_.momentum_);
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  const Stepped stepped = with_grad();
  if (stepped.params.empty()) return;
  const bool momentum = options_.momentum_ != 0;
  const std::vector<Tensor> buf = momentum ? state(0, stepped) : std::vector<Tensor>();
  if (options_.fused_) {
    multi_tensor_op(runtime::OpKind::sgd, stepped.params, momentum ? 1 : 0, "aten::_fused_sgd_");
    return;
  }
  std::vector<Tensor> decayed;  // held to the end of the step, as PyTorch's new list
  if (options_.weight_decay_ != 0) foreach_op(stepped.grads, 2, "aten::_foreach_add", &decayed);  // g + wd * p
  if (momentum) {
    foreach_op(buf, 1, "aten::_foreach_mul_");  // buf *= momentum
    foreach_op(buf, 2, "aten::_foreach_add_");  // buf += (1 - dampening) g
  }
  foreach_op(stepped.params, 2, "aten::_foreach_add_");  // p -= lr (buf or g)
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, const char* name)
    : Optimizer(std::move(params), name), options_(options), decoupled_(decoupled) {
  if (options_.lr_ < 0) detail::fail("{}: Invalid learning rate: {}", name, options_.lr_);
  if (options_.eps_ < 0) detail::fail("{}: Invalid epsilon value: {}", name, options_.eps_);
  if (options_.beta1_ < 0 || options_.beta1_ >= 1 || options_.beta2_ < 0 || options_.beta2_ >= 1) {
    detail::fail("{}: Invalid beta parameters: ({}, {})", name, options_.beta1_, options_.beta2_);
  }
  if (options_.weight_decay_ < 0) detail::fail("{}: Invalid weight_decay value: {}", name, options_.weight_decay_);
}

void Adam::step() {
  autograd::NoGradGuard no_grad;
  const Stepped stepped = with_grad();
  if (stepped.params.empty()) return;
  const std::vector<Tensor>& params = stepped.params;
  const std::vector<Tensor>& grads = stepped.grads;
  const std::vector<Tensor> exp_avg = state(0, stepped);
  const std::vector<Tensor> exp_avg_sq = state(1, stepped);
  if (options_.fused_) {
    multi_tensor_op(runtime::OpKind::adam, params, 0, decoupled_ ? "aten::_fused_adamw_" : "aten::_fused_adam_");
    return;
  }
  // PyTorch's _multi_tensor_adam: the decay, both moments, the denominator (a new list, freed at
  // the end of the step) and the update, each a foreach op over every parameter.
  std::vector<Tensor> decayed;
  if (options_.weight_decay_ != 0) {
    if (decoupled_) {
      foreach_op(params, 1, "aten::_foreach_mul_");  // p *= 1 - lr wd
    } else {
      foreach_op(grads, 2, "aten::_foreach_add", &decayed);  // g + wd p
    }
  }
  foreach_op(exp_avg, 2, "aten::_foreach_lerp_");      // m += (g - m)(1 - beta1)
  foreach_op(exp_avg_sq, 1, "aten::_foreach_mul_");    // v *= beta2
  foreach_op(exp_avg_sq, 2, "aten::_foreach_addcmul_");  // v += (1 - beta2) g g
  std::vector<Tensor> denom;
  {
    runtime::MemoryUseGuard use(os::MemoryUse::workspace);
    foreach_op(exp_avg_sq, 1, "aten::_foreach_sqrt", &denom);
  }
  foreach_op(denom, 1, "aten::_foreach_div_");       // / sqrt(bias correction 2)
  foreach_op(denom, 1, "aten::_foreach_add_");       // + eps
  foreach_op(params, 3, "aten::_foreach_addcdiv_");  // p -= step_size m / denom
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true, "AdamW") {}

}  // namespace syntorch::torch::optim
