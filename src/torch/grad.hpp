#pragma once
// Recording an op's backward: the torch layer's ops call record() when an input requires a
// gradient, with the tensors the backward needs and the backward itself as a callable that
// issues its kernels (grad mode is off while it runs).

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::detail {

// Records an op's backward (autograd::record, with the inputs and outputs in braces).
template <class F>
void record(std::string_view name, std::initializer_list<const Tensor*> inputs, std::initializer_list<Tensor*> outputs,
            std::vector<Tensor> saved, F f) {
  autograd::record(name, std::vector<const Tensor*>(inputs), std::vector<Tensor*>(outputs), std::move(saved),
                   std::move(f));
}
template <class F>
void record_n(std::string_view name, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
              std::vector<Tensor> saved, F f) {
  autograd::record(name, inputs, outputs, std::move(saved), std::move(f));
}

// An op without a backward refuses inputs that require a gradient, rather than cutting the graph.
void no_backward(std::initializer_list<const Tensor*> inputs, const char* op);

using Grads = std::vector<Tensor>;
inline bool needs(const autograd::Node& n, std::size_t input) { return n.needs_input_grad(input); }

}  // namespace syntorch::torch::detail
