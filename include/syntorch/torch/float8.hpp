#pragma once
// fp8 inference as Transformer Engine and TensorRT-LLM run it on Hopper and later: Linear weights
// stored in fp8 (e4m3) with a per-tensor scale, each GEMM's input quantised to fp8 (one pass
// over it), the GEMM at the device's fp8 matrix rate with both scales applied in its epilogue,
// and the output in the activations' dtype. Everything else (embeddings, norms, attention, the KV
// cache unless asked) keeps the activations' dtype.

#include <optional>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch {

// torch._scaled_mm: a [m, k] x b [k, n], both fp8, with fp32 per-tensor scales; the product is
// scaled (and the bias added) in the GEMM's epilogue and written as out_dtype (a's dtype when
// not given).
Tensor _scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                  const Tensor& bias = {}, std::optional<ScalarType> out_dtype = std::nullopt);

namespace fp8 {

// Transformer Engine's fp8_model_init: Linear layers (torch::nn::Linear and the parallel
// linears) built in this scope hold their weights in fp8; biases keep the default dtype.
class ModelInitGuard {
 public:
  ModelInitGuard();
  ~ModelInitGuard();
  ModelInitGuard(const ModelInitGuard&) = delete;
  ModelInitGuard& operator=(const ModelInitGuard&) = delete;

 private:
  bool previous_;
};

// Transformer Engine's fp8_autocast: in this scope, linear() with an fp8 weight quantises its
// input to fp8 and runs the GEMM in fp8 (output in the input's dtype). Outside it, an fp8 weight
// with a wider input is PyTorch's dtype-mismatch error.
class AutocastGuard {
 public:
  AutocastGuard();
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_;
};

bool model_init_enabled();
bool autocast_enabled();

// The dtype a Linear weight is built in now: fp8 under ModelInitGuard, else the default dtype.
ScalarType linear_weight_dtype();

}  // namespace fp8
}  // namespace syntorch::torch
