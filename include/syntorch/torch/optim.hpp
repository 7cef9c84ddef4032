#pragma once
// torch::optim: SGD, Adam and AdamW over meta tensors. step() launches what PyTorch's CUDA
// optimizers launch: by default (foreach) one multi-tensor kernel per tensor operation of the
// update (the _foreach_ ops), with fused one _fused_sgd_/_fused_adam_ kernel; the state (momentum
// buffers, Adam's two moments) is made at the first step, in the parameters' dtype, filed under
// optimizer state. Values are not simulated, so learning rates and betas change nothing.

#include <memory>
#include <vector>

#include "syntorch/torch/tensor.hpp"

namespace syntorch::torch::optim {

// The parameters and their gradients; a step updates those that have a gradient (a parameter
// that never gets one, frozen or unused, has no state and costs nothing).
class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params, const char* name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;
  // Whether step() takes a GradScaler's scale and inf flag on the device (PyTorch's
  // _step_supports_amp_scaling: the fused optimizers), so the scaler needs no host sync.
  virtual bool supports_amp_scaling() const { return false; }
  // Drops the gradients (set_to_none, PyTorch's default since 2.0: their memory is freed) or
  // zeroes them in place (a foreach kernel).
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& parameters() const { return params_; }
  // Bytes of optimizer state held now (0 before the first step).
  std::uint64_t state_bytes() const;
  // The state tensors, [slot][parameter] (SGD: the momentum buffers; Adam: exp_avg, exp_avg_sq):
  // undefined for a parameter before its first step.
  const std::vector<std::vector<Tensor>>& state_tensors() const { return state_; }

 protected:
  // The parameters a step updates (those with a gradient), in order: their positions, the
  // parameters and their gradients.
  struct Stepped {
    std::vector<std::size_t> index;
    std::vector<Tensor> params, grads;
  };
  Stepped with_grad() const;
  // State slot `slot` of the stepped parameters, in their order: zeros like each parameter, made
  // at its first step (PyTorch's lazy state).
  std::vector<Tensor> state(std::size_t slot, const Stepped& stepped);

  std::vector<Tensor> params_;
  std::vector<std::vector<Tensor>> state_;  // [slot][parameter]; undefined before its first step
};

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { lr_ = v; return *this; }
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  SGDOptions& foreach(bool v) { foreach_ = v; return *this; }
  SGDOptions& fused(bool v) { fused_ = v; return *this; }
  double lr_, momentum_ = 0, weight_decay_ = 0;
  bool foreach_ = true, fused_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  bool supports_amp_scaling() const override { return options_.fused_; }

 private:
  SGDOptions options_;
};

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& lr(double v) { lr_ = v; return *this; }
  AdamOptions& betas(double b1, double b2) { beta1_ = b1, beta2_ = b2; return *this; }
  AdamOptions& eps(double v) { eps_ = v; return *this; }
  AdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdamOptions& foreach(bool v) { foreach_ = v; return *this; }
  AdamOptions& fused(bool v) { fused_ = v; return *this; }
  double lr_, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  bool foreach_ = true, fused_ = false;
};

// Adam, and AdamW (decoupled weight decay, 0.01 by default).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = AdamOptions());
  void step() override;
  bool supports_amp_scaling() const override { return options_.fused_; }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, const char* name);

 private:
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options = AdamOptions().weight_decay(0.01));
};

}  // namespace syntorch::torch::optim
