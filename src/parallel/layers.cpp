#include "syntorch/parallel/layers.hpp"

#include <fmt/format.h>

#include <stdexcept>

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
                                                   bool with_bias)
    : torch::nn::Module("ColumnParallelLinear"),
      input_size(in),
      output_size(out),
      output_size_per_partition(divide(out, tp, "ColumnParallelLinear", "output_size")),
      tp_size(tp),
      tp_rank(rank),
      gather_output(gather) {
  check_rank(tp, rank, "ColumnParallelLinear");
  weight = register_parameter("weight", linear_weight({output_size_per_partition, input_size}, "ColumnParallelLinear.weight"));
  if (with_bias) bias = register_parameter("bias", parameter({output_size_per_partition}, "ColumnParallelLinear.bias"));
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& input) {
  torch::Tensor y = torch::nn::functional::linear(input, weight, bias);
  if (gather_output && tp_size > 1) return all_gather(y, state().tp_group, -1);
  return y;
}

RowParallelLinearImpl::RowParallelLinearImpl(std::int64_t in, std::int64_t out, int tp, int rank, bool parallel_input,
                                             bool with_bias)
    : torch::nn::Module("RowParallelLinear"),
      input_size(in),
      output_size(out),
      input_size_per_partition(divide(in, tp, "RowParallelLinear", "input_size")),
      tp_size(tp),
      tp_rank(rank),
      input_is_parallel(parallel_input) {
  check_rank(tp, rank, "RowParallelLinear");
  weight = register_parameter("weight", linear_weight({output_size, input_size_per_partition}, "RowParallelLinear.weight"));
  if (with_bias) bias = register_parameter("bias", parameter({output_size}, "RowParallelLinear.bias"));
}

torch::Tensor RowParallelLinearImpl::forward_unreduced(const torch::Tensor& input) {
  torch::Tensor x = input;
  if (!input_is_parallel && tp_size > 1) {
    x = input.narrow(-1, tp_rank * input_size_per_partition, input_size_per_partition).contiguous();
  }
  return torch::nn::functional::linear(x, weight);
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& input) {
  torch::Tensor y = forward_unreduced(input);
  if (tp_size > 1) all_reduce(y, state().tp_group);
  if (bias.defined()) y = y + bias;
  return y;
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(std::int64_t num, std::int64_t dim, int tp, int rank)
    : torch::nn::Module("VocabParallelEmbedding"),
      num_embeddings(num),
      embedding_dim(dim),
      num_embeddings_per_partition(divide(num, tp, "VocabParallelEmbedding", "num_embeddings")),
      tp_size(tp),
      tp_rank(rank) {
  check_rank(tp, rank, "VocabParallelEmbedding");
  weight = register_parameter("weight", parameter({num_embeddings_per_partition, embedding_dim}, "VocabParallelEmbedding.weight"));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& indices) {
  // Tokens outside this rank's range read zeros (Megatron masks them); the all-reduce sums.
  torch::Tensor y = torch::embedding(weight, indices);
  if (tp_size > 1) all_reduce(y, state().tp_group);
  return y;
}

}  // namespace syntorch::parallel
