// The tensor- and sequence-parallel region functions, recorded for autograd.

#include "syntorch/parallel/mappings.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::parallel {

namespace {

using Grads = std::vector<torch::Tensor>;

// A new handle on x's memory (no host op): what an in-place collective's output is.
torch::Tensor alias(const torch::Tensor& x) { return torch::autograd::saved(x); }

std::int64_t wrap(std::int64_t dim, const torch::Tensor& x, const char* op) {
  const std::int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (d < 0 || d >= x.dim()) throw std::invalid_argument(fmt::format("{}: dim {} is out of range for a {}-d tensor", op, dim, x.dim()));
  return d;
}

}  // namespace

torch::Tensor copy_to_tensor_model_parallel_region(const torch::Tensor& x) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2 || !torch::autograd::any_requires_grad({&x})) return x;
  torch::Tensor out = alias(x);
  torch::autograd::record("CopyToModelParallelRegionBackward", {&x}, {&out}, {}, [](Grads& grads, Grads&, const torch::autograd::Node&) {
    torch::Tensor r = grads[0];
    all_reduce(r, state().tp_group);
    return Grads{r};
  });
  return out;
}

torch::Tensor reduce_from_tensor_model_parallel_region(const torch::Tensor& x) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2) return x;
  torch::Tensor out = alias(x);
  all_reduce(out, g);
  if (torch::autograd::any_requires_grad({&x})) {
    torch::autograd::record("ReduceFromModelParallelRegionBackward", {&x}, {&out}, {},
                            [](Grads& grads, Grads&, const torch::autograd::Node&) { return Grads{grads[0]}; });
  }
  return out;
}

torch::Tensor gather_from_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2) return x;
  const std::int64_t d = wrap(dim, x, "gather_from_sequence_parallel_region");
  torch::Tensor out = all_gather(x, g, d);
  if (torch::autograd::any_requires_grad({&x})) {
    torch::autograd::record("GatherFromSequenceParallelRegionBackward", {&x}, {&out}, {},
                            [d](Grads& grads, Grads&, const torch::autograd::Node&) {
                              return Grads{reduce_scatter(grads[0].contiguous(), state().tp_group, d)};
                            });
  }
  return out;
}

torch::Tensor reduce_scatter_to_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2) return x;
  const std::int64_t d = wrap(dim, x, "reduce_scatter_to_sequence_parallel_region");
  torch::Tensor out = reduce_scatter(x, g, d);
  if (torch::autograd::any_requires_grad({&x})) {
    torch::autograd::record("ReduceScatterToSequenceParallelRegionBackward", {&x}, {&out}, {},
                            [d](Grads& grads, Grads&, const torch::autograd::Node&) {
                              return Grads{all_gather(grads[0], state().tp_group, d)};
                            });
  }
  return out;
}

torch::Tensor gather_from_tensor_model_parallel_region(const torch::Tensor& x) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2) return x;
  torch::Tensor out = all_gather(x, g, -1);
  if (torch::autograd::any_requires_grad({&x})) {
    const std::int64_t share = x.size(-1);
    torch::autograd::record("GatherFromModelParallelRegionBackward", {&x}, {&out}, {},
                            [share](Grads& grads, Grads&, const torch::autograd::Node&) {
                              return Grads{grads[0].narrow(-1, state().tp_group.rank * share, share)};
                            });
  }
  return out;
}

torch::Tensor scatter_to_sequence_parallel_region(const torch::Tensor& x, std::int64_t dim) {
  const ProcessGroup& g = state().tp_group;
  if (g.size() < 2) return x;
  const std::int64_t d = wrap(dim, x, "scatter_to_sequence_parallel_region");
  const std::int64_t size = x.size(d);
  if (size % g.size() != 0) {
    throw std::invalid_argument(fmt::format("scatter_to_sequence_parallel_region: size {} of dim {} does not split "
                                            "over {} ranks", size, d, g.size()));
  }
  const std::int64_t share = size / g.size();
  torch::Tensor out;
  {
    torch::autograd::NoGradGuard no_grad;
    out = x.narrow(d, g.rank * share, share);
  }
  if (torch::autograd::any_requires_grad({&x})) {
    torch::autograd::record("ScatterToSequenceParallelRegionBackward", {&x}, {&out}, {},
                            [d](Grads& grads, Grads&, const torch::autograd::Node&) {
                              return Grads{all_gather(grads[0], state().tp_group, d)};
                            });
  }
  return out;
}

}  // namespace syntorch::parallel
