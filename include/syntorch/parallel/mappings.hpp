#pragma once
// Megatron's tensor- and sequence-parallel region functions (megatron/core/tensor_parallel/
// mappings.py): collectives that autograd knows, each backward the forward's transpose. Outside
// grad mode (inference) they cost what their forward costs; a group of one costs nothing.

#include <cstdint>

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::parallel {

// Forward: x as it is. Backward: the gradient all-reduced over the TP group (the input of a
// column-parallel layer is used by every rank).
torch::Tensor copy_to_tensor_model_parallel_region(const torch::Tensor& x);
// Forward: x all-reduced over the TP group (a row-parallel layer's partial sums). Backward: as it is.
torch::Tensor reduce_from_tensor_model_parallel_region(const torch::Tensor& x);
// Forward: the last dim all-gathered over the TP group (a column-parallel output made whole).
// Backward: this rank's slice of the gradient (a view).
torch::Tensor gather_from_tensor_model_parallel_region(const torch::Tensor& x);
// Sequence parallel (Korthikanti et al., 2022): forward all-gathers the sequence shards along
// `dim`; backward reduce-scatters the gradient.
torch::Tensor gather_from_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim);
// Forward reduce-scatters the partial sums along `dim`; backward all-gathers the gradient.
torch::Tensor reduce_scatter_to_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim);
// Forward keeps this rank's shard along `dim` (a view); backward all-gathers the gradient.
torch::Tensor scatter_to_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim);

}  // namespace syntorch::parallel
