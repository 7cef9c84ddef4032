#pragma once
// The whole torch layer, as <torch/torch.h>: include this and write
//   namespace torch = syntorch::torch;
// then use torch::Tensor, torch::matmul, torch::nn::Linear, ... as with libtorch.

#include "syntorch/torch/amp.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/autocast.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/clock.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/fused.hpp"
#include "syntorch/torch/module.hpp"
#include "syntorch/torch/modules.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/profiler.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"
#include "syntorch/torch/utils.hpp"
