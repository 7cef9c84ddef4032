// The module tree and the common layers.

#include <fmt/format.h>

#include "internal.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/module.hpp"
#include "syntorch/torch/modules.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch::nn {

namespace {
void check_name(const std::string& name, const char* kind) {
  if (name.empty()) throw Error(fmt::format("{} name must not be empty", kind));
  if (name.find('.') != std::string::npos) {
    throw Error(fmt::format("{} name must not contain a dot (got \"{}\")", kind, name));
  }
}
}  // namespace

void throw_empty_holder() {
  throw Error("Accessing empty ModuleHolder (constructed with nullptr): assign a module to it first");
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_name(name, "Parameter");
  // A parameter is a leaf that requires a gradient (unless asked otherwise), as nn.Parameter.
  if (tensor.defined() && (requires_grad ? tensor.is_floating_point() : tensor.requires_grad())) {
    tensor.requires_grad_(requires_grad);
  }
  if (!parameters_.insert(name, std::move(tensor))) {
    throw Error(fmt::format("Parameter '{}' already defined in {}", name, name_));
  }
  return parameters_[parameters_.size() - 1].second;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "Buffer");
  if (!buffers_.insert(name, std::move(tensor))) {
    throw Error(fmt::format("Buffer '{}' already defined in {}", name, name_));
  }
  return buffers_[buffers_.size() - 1].second;
}

void Module::add_child(std::string name, std::shared_ptr<Module> child) {
  check_name(name, "Submodule");
  if (!child) throw Error(fmt::format("register_module(\"{}\"): the module is null", name));
  if (!children_.insert(name, std::move(child))) {
    throw Error(fmt::format("Submodule '{}' already defined in {}", name, name_));
  }
}

void Module::collect(const std::string& prefix, bool parameters, bool recurse,
                     OrderedDict<std::string, Tensor>& out) const {
  for (const auto& item : parameters ? parameters_ : buffers_) out.insert(prefix + item.first, item.second);
  if (!recurse) return;
  for (const auto& child : children_) child.second->collect(prefix + child.first + ".", parameters, true, out);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", false, recurse, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules() const {
  OrderedDict<std::string, std::shared_ptr<Module>> out;
  for (const auto& child : children_) {
    out.insert(child.first, child.second);
    for (const auto& below : child.second->named_modules()) out.insert(child.first + "." + below.first, below.second);
  }
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& child : children_) child.second->train(on);
}

// --- Layers ---

LinearImpl::LinearImpl(const LinearOptions& o) : Module("Linear"), options(o) {
  const ScalarType t = o.dtype().value_or(get_default_dtype());
  const ScalarType weight_type = o.dtype().value_or(fp8::linear_weight_dtype());
  weight = register_parameter("weight", detail::make_parameter({o.out_features(), o.in_features()}, weight_type,
                                                               "Linear.weight"));
  if (o.bias()) bias = register_parameter("bias", detail::make_parameter({o.out_features()}, t, "Linear.bias"));
}

Tensor LinearImpl::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o) : Module("LayerNorm"), options(o) {
  if (o.elementwise_affine()) {
    const ScalarType t = o.dtype().value_or(get_default_dtype());
    weight = register_parameter("weight", detail::make_parameter(o.normalized_shape(), t, "LayerNorm.weight"));
    bias = register_parameter("bias", detail::make_parameter(o.normalized_shape(), t, "LayerNorm.bias"));
  }
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return torch::layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& o) : Module("RMSNorm"), options(o) {
  if (o.elementwise_affine()) {
    const ScalarType t = o.dtype().value_or(get_default_dtype());
    weight = register_parameter("weight", detail::make_parameter(o.normalized_shape(), t, "RMSNorm.weight"));
  }
}

Tensor RMSNormImpl::forward(const Tensor& input) {
  return torch::rms_norm(input, options.normalized_shape(), weight, options.eps());
}

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o) : Module("Embedding"), options(o) {
  const ScalarType t = o.dtype().value_or(get_default_dtype());
  weight = register_parameter("weight",
                              detail::make_parameter({o.num_embeddings(), o.embedding_dim()}, t, "Embedding.weight"));
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return torch::embedding(weight, indices); }

Tensor GELUImpl::forward(const Tensor& input) { return torch::gelu(input, options.approximate()); }
Tensor ReLUImpl::forward(const Tensor& input) { return torch::relu(input); }
Tensor SiLUImpl::forward(const Tensor& input) { return torch::silu(input); }

DropoutImpl::DropoutImpl(const DropoutOptions& o) : Module("Dropout"), options(o) {
  if (o.p() < 0 || o.p() > 1) {
    throw Error(fmt::format("Dropout: dropout probability has to be between 0 and 1, but got {}", o.p()));
  }
}

Tensor DropoutImpl::forward(const Tensor& input) { return torch::dropout(input, options.p(), is_training()); }

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

}  // namespace syntorch::torch::nn

namespace syntorch::torch {

Tensor parameter_tensor(IntArrayRef sizes, ScalarType dtype, std::string_view what) {
  return detail::make_parameter(sizes, dtype, what);
}

}  // namespace syntorch::torch
