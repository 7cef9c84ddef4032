#pragma once
// Parameters another stream is still writing: under Megatron's --overlap-param-gather the
// distributed optimizer all-gathers the updated 16-bit weights on a communication stream after
// its step, and each module's forward pre-hook waits for its bucket's gather. Here the parallel
// layers wait for their own parameters before their forward, and a model waits for a layer's
// parameters before running it, so the gather of a later layer's bucket runs under the forward of
// the earlier layers.

#include <initializer_list>
#include <span>

#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/module.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::parallel {

// `params` (one bucket) hold their values once `ready` has happened (on this rank).
void set_parameters_pending(std::span<const torch::Tensor> params, const torch::cuda::Event& ready);
// Makes the current stream wait for the buckets of any of `params` (undefined ones skipped) still
// pending, once a bucket: they are then ready. Nothing pending costs one check.
void wait_for_parameters(std::initializer_list<const torch::Tensor*> params);
// ... for every parameter of `module` and below it (listed only when something is pending).
void wait_for_parameters(const torch::nn::Module& module);
// Forgets what is pending for `params` (their owner is done with them).
void forget_pending_parameters(std::span<const torch::Tensor> params) noexcept;

}  // namespace syntorch::parallel
