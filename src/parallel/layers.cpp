#include "syntorch/parallel/layers.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "syntorch/parallel/mappings.hpp"
#include "syntorch/parallel/parameter_sync.hpp"
#include "syntorch/torch/autocast.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::parallel {

namespace {
std::int64_t divide(std::int64_t size, int parts, const char* layer, const char* what) {
  if (parts < 1 || size % parts != 0) {
    throw std::invalid_argument(fmt::format("{}: {} ({}) must be divisible by tp_size ({})", layer, what, size, parts));
  }
  return size / parts;
}
void check_rank(int tp_size, int tp_rank, const char* layer) {
  if (tp_rank < 0 || tp_rank >= tp_size) {
    throw std::invalid_argument(fmt::format("{}: tp_rank {} is outside 0..{}", layer, tp_rank, tp_size - 1));
  }
}
torch::Tensor parameter(std::vector<std::int64_t> sizes, std::string_view what) {
  return torch::parameter_tensor(sizes, torch::get_default_dtype(), what);
}
// A linear layer's weight: fp8 under torch::fp8::ModelInitGuard.
torch::Tensor linear_weight(std::vector<std::int64_t> sizes, std::string_view what) {
  return torch::parameter_tensor(sizes, torch::fp8::linear_weight_dtype(), what);
}
}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(std::int64_t in, std::int64_t out, int tp, int rank, bool gather,
                                                   bool with_bias, bool sp)
    : torch::nn::Module("ColumnParallelLinear"),
      input_size(in),
      output_size(out),
      output_size_per_partition(divide(out, tp, "ColumnParallelLinear", "output_size")),
      tp_size(tp),
      tp_rank(rank),
      gather_output(gather),
      sequence_parallel(sp && tp > 1) {
  check_rank(tp, rank, "ColumnParallelLinear");
  weight = register_parameter("weight", linear_weight({output_size_per_partition, input_size}, "ColumnParallelLinear.weight"));
  if (with_bias) bias = register_parameter("bias", parameter({output_size_per_partition}, "ColumnParallelLinear.bias"));
}

namespace {
constexpr std::int64_t kSequenceDim = 1;  // of [batch, seq, hidden]
using Grads = std::vector<torch::Tensor>;
}  // namespace

torch::Tensor column_parallel_linear(const torch::Tensor& input_arg, const torch::Tensor& weight_arg,
                                     const torch::Tensor& bias_arg, bool sequence_parallel) {
  namespace F = torch::nn::functional;
  // Under autocast the inputs are cast first (recorded casts, so fp32 parameters get fp32
  // gradients), as autocast's linear would.
  const torch::Tensor input = torch::autocast::lower_precision(input_arg);
  const torch::Tensor weight = torch::autocast::lower_precision(weight_arg);
  const torch::Tensor bias = torch::autocast::lower_precision(bias_arg);
  const bool sp = sequence_parallel && state().tp_size > 1;
  // The whole input (all-gathered under sequence parallelism, then dropped) through one GEMM;
  // the backward keeps only the input shard, gathers it again for the weight's gradient, and
  // reduces the input's gradient over the TP group (an all-reduce, or a reduce-scatter back to
  // the shards). Megatron overlaps that reduction with the weight-gradient GEMM and the gather
  // with the input-gradient GEMM; here they run in turn on the compute stream.
  torch::Tensor y;
  {
    torch::autograd::NoGradGuard no_grad;
    y = F::linear(sp ? all_gather(input, state().tp_group, kSequenceDim) : input, weight, bias);
  }
  if (!torch::autograd::any_requires_grad({&input, &weight, &bias})) return y;
  const std::int64_t in = weight.size(1), out = weight.size(0);
  torch::autograd::record(
      "LinearWithGradAccumulationAndAsyncCommunicationBackward", {&input, &weight, &bias}, {&y}, {input, weight},
      [sp, in, out](Grads& g, Grads& s, const torch::autograd::Node& n) {
        const ProcessGroup& tp = state().tp_group;
        torch::Tensor gx, gw, gb;
        if (n.needs_input_grad(0)) {
          gx = torch::matmul(g[0], s[1]);
          if (sp) {
            gx = reduce_scatter(gx, tp, kSequenceDim);
          } else {
            all_reduce(gx, tp);
          }
        }
        if (n.needs_input_grad(1)) {
          torch::Tensor total = sp ? all_gather(s[0], tp, kSequenceDim) : s[0];
          gw = torch::mm(g[0].reshape({-1, out}).t(), total.reshape({-1, in}));
        }
        if (n.needs_input_grad(2)) gb = torch::sum(g[0].reshape({-1, out}), {0});
        return Grads{gx, gw, gb};
      });
  return y;
}

torch::Tensor ColumnParallelLinearImpl::forward_local(const torch::Tensor& input) {
  wait_for_parameters({&weight, &bias});
  return column_parallel_linear(input, weight, bias, sequence_parallel);
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& input) {
  torch::Tensor y = forward_local(input);
  if (gather_output && tp_size > 1) return gather_from_tensor_model_parallel_region(y);
  return y;
}

RowParallelLinearImpl::RowParallelLinearImpl(std::int64_t in, std::int64_t out, int tp, int rank, bool parallel_input,
                                             bool with_bias, bool sp)
    : torch::nn::Module("RowParallelLinear"),
      input_size(in),
      output_size(out),
      input_size_per_partition(divide(in, tp, "RowParallelLinear", "input_size")),
      tp_size(tp),
      tp_rank(rank),
      input_is_parallel(parallel_input),
      sequence_parallel(sp && tp > 1) {
  check_rank(tp, rank, "RowParallelLinear");
  weight = register_parameter("weight", linear_weight({output_size, input_size_per_partition}, "RowParallelLinear.weight"));
  if (with_bias) bias = register_parameter("bias", parameter({output_size}, "RowParallelLinear.bias"));
}

torch::Tensor RowParallelLinearImpl::forward_unreduced(const torch::Tensor& input) {
  wait_for_parameters({&weight, &bias});
  torch::Tensor x = input;
  if (!input_is_parallel && tp_size > 1) {
    x = input.narrow(-1, tp_rank * input_size_per_partition, input_size_per_partition).contiguous();
  }
  return torch::nn::functional::linear(x, weight);
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& input) {
  torch::Tensor y = forward_unreduced(input);
  if (tp_size > 1) {
    y = sequence_parallel ? reduce_scatter_to_sequence_parallel_region(y, kSequenceDim)
                          : reduce_from_tensor_model_parallel_region(y);
  }
  if (bias.defined()) y = y + bias;
  return y;
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(std::int64_t num, std::int64_t dim, int tp, int rank, bool sp)
    : torch::nn::Module("VocabParallelEmbedding"),
      num_embeddings(num),
      embedding_dim(dim),
      num_embeddings_per_partition(divide(num, tp, "VocabParallelEmbedding", "num_embeddings")),
      tp_size(tp),
      tp_rank(rank),
      sequence_parallel(sp && tp > 1) {
  check_rank(tp, rank, "VocabParallelEmbedding");
  weight = register_parameter("weight", parameter({num_embeddings_per_partition, embedding_dim}, "VocabParallelEmbedding.weight"));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& indices) {
  wait_for_parameters({&weight});
  // Tokens outside this rank's range read zeros (Megatron masks them); the all-reduce sums.
  torch::Tensor y = torch::embedding(weight, indices);
  if (tp_size > 1) {
    y = sequence_parallel ? reduce_scatter_to_sequence_parallel_region(y, kSequenceDim)
                          : reduce_from_tensor_model_parallel_region(y);
  }
  return y;
}

}  // namespace syntorch::parallel
