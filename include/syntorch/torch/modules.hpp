#pragma once
// libtorch's common layers (Linear, LayerNorm, RMSNorm, Embedding, GELU, ReLU, SiLU, Dropout,
// ModuleList) with their options. Parameters are allocated (as weights) when a module is built, in
// the options' dtype or the default dtype; their values are not simulated, so no init kernel runs.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "syntorch/torch/module.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::nn {

// Options as libtorch's: setters return the options (chainable), getters share their name.
#define SYNTORCH_TORCH_ARG(T, name)                          \
 public:                                                     \
  auto& name(const T& value) {                               \
    name##_ = value;                                         \
    return *this;                                            \
  }                                                          \
  const T& name() const { return name##_; }                  \
                                                             \
 private:                                                    \
  T name##_

// --- Linear ---
struct LinearOptions {
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  SYNTORCH_TORCH_ARG(std::int64_t, in_features);
  SYNTORCH_TORCH_ARG(std::int64_t, out_features);
  SYNTORCH_TORCH_ARG(bool, bias) = true;
  SYNTORCH_TORCH_ARG(std::optional<ScalarType>, dtype);  // default: get_default_dtype()
};

// y = x wᵀ + b: weight [out, in], bias [out]; one gemm per forward.
class LinearImpl : public Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  LinearImpl(std::int64_t in_features, std::int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  Tensor forward(const Tensor& input);

  LinearOptions options;
  Tensor weight;
  Tensor bias;  // undefined without bias
};
TORCH_MODULE(Linear);

// --- LayerNorm ---
struct LayerNormOptions {
  LayerNormOptions(std::vector<std::int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  SYNTORCH_TORCH_ARG(std::vector<std::int64_t>, normalized_shape);
  SYNTORCH_TORCH_ARG(double, eps) = 1e-5;
  SYNTORCH_TORCH_ARG(bool, elementwise_affine) = true;
  SYNTORCH_TORCH_ARG(std::optional<ScalarType>, dtype);
};

// Normalises the trailing normalized_shape dims; weight and bias of that shape when affine.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  Tensor forward(const Tensor& input);

  LayerNormOptions options;
  Tensor weight;
  Tensor bias;
};
TORCH_MODULE(LayerNorm);

// --- RMSNorm ---
struct RMSNormOptions {
  RMSNormOptions(std::vector<std::int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  SYNTORCH_TORCH_ARG(std::vector<std::int64_t>, normalized_shape);
  SYNTORCH_TORCH_ARG(std::optional<double>, eps);
  SYNTORCH_TORCH_ARG(bool, elementwise_affine) = true;
  SYNTORCH_TORCH_ARG(std::optional<ScalarType>, dtype);
};

// Root-mean-square normalisation of the trailing dims (a weight, no bias), as Llama uses.
class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  Tensor forward(const Tensor& input);

  RMSNormOptions options;
  Tensor weight;
};
TORCH_MODULE(RMSNorm);

// --- Embedding ---
struct EmbeddingOptions {
  EmbeddingOptions(std::int64_t num_embeddings, std::int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  SYNTORCH_TORCH_ARG(std::int64_t, num_embeddings);
  SYNTORCH_TORCH_ARG(std::int64_t, embedding_dim);
  SYNTORCH_TORCH_ARG(std::optional<ScalarType>, dtype);
};

// A lookup table weight [num_embeddings, embedding_dim]; forward gathers rows by index.
class EmbeddingImpl : public Module {
 public:
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  EmbeddingImpl(std::int64_t num_embeddings, std::int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  Tensor forward(const Tensor& indices);

  EmbeddingOptions options;
  Tensor weight;
};
TORCH_MODULE(Embedding);

// --- Activations ---
struct GELUOptions {
  SYNTORCH_TORCH_ARG(std::string, approximate) = "none";
};

// GELU, exact or tanh-approximated (the same cost here).
class GELUImpl : public Module {
 public:
  explicit GELUImpl(GELUOptions options = {}) : Module("GELU"), options(std::move(options)) {}
  Tensor forward(const Tensor& input);

  GELUOptions options;
};
TORCH_MODULE(GELU);

// max(x, 0).
class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& input);
};
TORCH_MODULE(ReLU);

// x sigmoid(x).
class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& input);
};
TORCH_MODULE(SiLU);

// --- Dropout ---
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT
  SYNTORCH_TORCH_ARG(double, p);
  SYNTORCH_TORCH_ARG(bool, inplace) = false;
};

// Zeroes elements with probability p in training mode (one mul kernel); the identity in eval mode
// (nothing launched).
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  explicit DropoutImpl(double p) : DropoutImpl(DropoutOptions(p)) {}
  Tensor forward(const Tensor& input);

  DropoutOptions options;
};
TORCH_MODULE(Dropout);

// --- ModuleList ---
// An indexed list of child modules, registered under their indices ("0", "1", ...).
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}

  void push_back(std::shared_ptr<Module> module);
  template <typename M>
  void push_back(const ModuleHolder<M>& holder) {
    push_back(std::static_pointer_cast<Module>(holder.ptr()));
  }

  std::size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  const std::shared_ptr<Module>& operator[](std::size_t index) const { return modules_.at(index); }
  template <typename M>
  std::shared_ptr<M> ptr(std::size_t index) const {
    return std::dynamic_pointer_cast<M>(modules_.at(index));
  }
  template <typename M>
  M& at(std::size_t index) const {
    M* m = modules_.at(index)->template as<M>();
    if (!m) throw Error("ModuleList::at: the module at this index is not of the requested type");
    return *m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
TORCH_MODULE(ModuleList);

#undef SYNTORCH_TORCH_ARG

}  // namespace syntorch::torch::nn
