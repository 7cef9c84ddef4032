#pragma once
// What the torch layer's ops share for their backward: they call autograd::record when an input
// requires a gradient (with the tensors the backward needs and the backward itself, a callable
// that issues its kernels with grad mode off), and no_backward where none is modelled.

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::detail {

// An op without a backward refuses inputs that require a gradient, rather than cutting the graph.
void no_backward(std::initializer_list<const Tensor*> inputs, const char* op);

using Grads = std::vector<Tensor>;

}  // namespace syntorch::torch::detail
