// Optimizers: their steps as the foreach ops or the fused kernel PyTorch launches.

#include "syntorch/torch/optim.hpp"

#include "internal.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch::optim {

// One _foreach_ op over `lists[0]`'s tensors reading `inputs` lists; `out` (when given) receives a
// new list like lists[0] (torch._foreach_sqrt and the out-of-place ops).
static void foreach_op(const std::vector<Tensor>& list, int inputs, std::string_view aten, std::vector<Tensor>* out = nullptr) {
  if (list.empty()) return;
  runtime::RankContext* ctx = runtime::current_rank();
  std::int64_t elements = 0;
  for (const Tensor& t : list) elements += t.numel();
  if (out) {
    out->clear();
    for (const Tensor& t : list) out->push_back(detail::make_tensor(ctx, t.sizes(), t.dtype(), t.device(), aten));
  }
  if (!ctx) return;
  runtime::OpDesc op;
  op.kind = runtime::OpKind::foreach;
  op.dtype = to_runtime_dtype(list[0].dtype());
  op.elements = static_cast<std::uint64_t>(elements);
  op.batch = list.size();
  op.k = static_cast<std::uint64_t>(inputs);
  detail::dispatch(ctx, op, aten, list[0].device(), elements == 0);
}

namespace {

// The fused step: one runtime op over every parameter.
void fused_op(runtime::OpKind kind, const std::vector<Tensor>& params, std::uint64_t momentum, std::string_view aten) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx || params.empty()) return;
  std::int64_t elements = 0;
  for (const Tensor& t : params) elements += t.numel();
  runtime::OpDesc op;
  op.kind = kind;
  op.dtype = to_runtime_dtype(params[0].dtype());
  op.elements = static_cast<std::uint64_t>(elements);
  op.batch = params.size();
  op.k = momentum;
  detail::dispatch(ctx, op, aten, params[0].device(), elements == 0);
}

}  // namespace

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

}  // namespace syntorch::torch

namespace syntorch::torch::optim {

Optimizer::Optimizer(std::vector<Tensor> params, const char* name) : params_(std::move(params)) {
  if (params_.empty()) detail::fail("{}: optimizer got an empty parameter list", name);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) detail::fail("{}: parameter {} is undefined", name, i);
    if (!params_[i].is_leaf()) detail::fail("{}: can't optimize a non-leaf Tensor (parameter {})", name, i);
    if (!params_[i].requires_grad()) {
      detail::fail("{}: parameter {} does not require grad (requires_grad_() it, or leave it out)", name, i);
    }
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
    for (const Tensor& t : slot) bytes += t.storage_nbytes();
  }
  return bytes;
}

void Optimizer::with_grad(std::vector<Tensor>& params, std::vector<Tensor>& grads) const {
  for (const Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    params.push_back(p);
    grads.push_back(p.grad());
  }
}

std::vector<Tensor>& Optimizer::state(std::size_t slot) {
  if (state_.size() <= slot) state_.resize(slot + 1);
  std::vector<Tensor>& s = state_[slot];
  if (s.empty()) {
    runtime::MemoryUseGuard use(os::MemoryUse::optimizer_state);
    for (const Tensor& p : params_) s.push_back(zeros_like(p));
  }
  return s;
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params), "SGD"), options_(options) {
  if (options_.lr_ < 0) detail::fail("SGD: Invalid learning rate: {}", options_.lr_);
  if (options_.momentum_ < 0) detail::fail("SGD: Invalid momentum value: {}", options_.momentum_);
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> params, grads;
  with_grad(params, grads);
  if (params.empty()) return;
  const bool momentum = options_.momentum_ != 0;
  if (options_.fused_) {
    if (momentum) state(0);
    fused_op(runtime::OpKind::sgd, params, momentum ? 1 : 0, "aten::_fused_sgd_");
    return;
  }
  std::vector<Tensor> decayed;  // held to the end of the step, as PyTorch's new list
  if (options_.weight_decay_ != 0) foreach_op(grads, 2, "aten::_foreach_add", &decayed);  // g + wd * p
  if (momentum) {
    state(0);
    foreach_op(state_[0], 1, "aten::_foreach_mul_");  // buf *= momentum
    foreach_op(state_[0], 2, "aten::_foreach_add_");  // buf += (1 - dampening) g
    foreach_op(params, 2, "aten::_foreach_add_");     // p -= lr buf
  } else {
    foreach_op(params, 2, "aten::_foreach_add_");  // p -= lr g
  }
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
  std::vector<Tensor> params, grads;
  with_grad(params, grads);
  if (params.empty()) return;
  state(0);
  state(1);  // (may move state_[0]: take references after both exist)
  std::vector<Tensor>& exp_avg = state_[0];
  std::vector<Tensor>& exp_avg_sq = state_[1];
  if (options_.fused_) {
    fused_op(runtime::OpKind::adam, params, 0, decoupled_ ? "aten::_fused_adamw_" : "aten::_fused_adam_");
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
