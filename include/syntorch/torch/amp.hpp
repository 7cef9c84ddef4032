#pragma once
// torch.amp.GradScaler("cuda"): loss scaling for fp16 training. scale() multiplies the loss by
// the scale (a device tensor, made at the first call); unscale_() checks every gradient for
// infs and NaNs while dividing it by the scale (one multi-tensor kernel per dtype group); step()
// reads the inf flag on the host (a sync) before an optimizer's step, except for a fused
// optimizer, which takes the flag and the scale on the device (no sync: such a step can be
// captured in a CUDA graph); update() adjusts the scale (one kernel). Values are not simulated:
// no step is ever skipped and the scale never changes.

#include <utility>
#include <vector>

#include "syntorch/torch/optim.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::torch::amp {

struct GradScalerOptions {
  GradScalerOptions& init_scale(double v) { init_scale_ = v; return *this; }
  GradScalerOptions& growth_factor(double v) { growth_factor_ = v; return *this; }
  GradScalerOptions& backoff_factor(double v) { backoff_factor_ = v; return *this; }
  GradScalerOptions& growth_interval(std::int64_t v) { growth_interval_ = v; return *this; }
  GradScalerOptions& enabled(bool v) { enabled_ = v; return *this; }
  double init_scale_ = 65536.0, growth_factor_ = 2.0, backoff_factor_ = 0.5;
  std::int64_t growth_interval_ = 2000;
  bool enabled_ = true;
};

class GradScaler {
 public:
  // Throws torch::Error for a growth factor not above 1, a backoff factor outside (0, 1), or a
  // growth interval below 1.
  explicit GradScaler(GradScalerOptions options = {});

  // outputs * scale (outputs itself when disabled).
  Tensor scale(const Tensor& outputs);
  // Divides the optimizer's gradients by the scale and records whether any is not finite.
  // Throws torch::Error when called twice before update(), after step(), or on fp16 gradients
  // (fp16 parameters: PyTorch refuses to unscale those).
  void unscale_(optim::Optimizer& optimizer);
  // The optimizer's step, after unscale_() if it was not called (a fused optimizer instead takes
  // the scale and the inf flag into its kernel).
  void step(optim::Optimizer& optimizer);
  // Updates the scale from the inf flags of the optimizers stepped since the last update. Throws
  // torch::Error when none was.
  void update();

  bool is_enabled() const { return options_.enabled_; }
  // The current scale, read on the host (a sync, as PyTorch's get_scale()).
  double get_scale();

 private:
  enum class Stage : std::uint8_t { ready, unscaled, stepped };
  struct PerOptimizer {
    const optim::Optimizer* optimizer;
    Stage stage = Stage::ready;
    Tensor found_inf;
  };
  PerOptimizer& state_of(const optim::Optimizer& optimizer);
  void check_scale(const char* op) const;
  // The non-finite check of the optimizer's gradients (and their division by inv_scale).
  Tensor check_and_unscale(const optim::Optimizer& optimizer, const Tensor& inv_scale, bool allow_fp16);

  GradScalerOptions options_;
  Tensor scale_, growth_tracker_;
  std::vector<PerOptimizer> per_optimizer_;
};

}  // namespace syntorch::torch::amp
