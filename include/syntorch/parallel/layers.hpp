#pragma once
// Megatron-LM's tensor-parallel layers over the torch API (Shoeybi et al., 2019, section 3).
// ColumnParallelLinear splits the weight's output columns across the TP ranks (each holds
// output/tp of them, no communication on the way in); RowParallelLinear splits the input rows
// (each rank multiplies its slice and an all-reduce sums the partial outputs);
// VocabParallelEmbedding splits the vocabulary (each rank looks up the tokens in its range and
// an all-reduce combines them). Sizes must divide by tp_size, as in Megatron.
// Under autograd they backpropagate as Megatron's do: a column-parallel layer all-reduces its
// input's gradient over the TP group; with sequence parallelism (Korthikanti et al., 2022) the
// activations between layers are sharded along the sequence (dim 1 of [batch, seq, hidden]): a
// column-parallel layer all-gathers its input (and again in backward, keeping only the shard
// for it, then reduce-scatters the input's gradient), a row-parallel layer and the embedding
// reduce-scatter their outputs instead of all-reducing them.

#include <cstdint>

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/module.hpp"
#include "syntorch/torch/modules.hpp"

namespace syntorch::parallel {

// input [..., in] (this rank's sequence shard under sequence parallelism) times weight [out/tp,
// in]ᵀ (+ bias): the GEMM of a column-parallel layer with Megatron's backward
// (LinearWithGradAccumulationAndAsyncCommunication), no gather of the output. Also the tied
// output layer over an embedding's weight.
torch::Tensor column_parallel_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                                     bool sequence_parallel);

class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  // gather_output: all-gather the output columns so every rank holds the whole output.
  ColumnParallelLinearImpl(std::int64_t input_size, std::int64_t output_size, int tp_size, int tp_rank,
                           bool gather_output = true, bool bias = true, bool sequence_parallel = false);
  torch::Tensor forward(const torch::Tensor& input);
  // This rank's columns of the output, whatever gather_output says.
  torch::Tensor forward_local(const torch::Tensor& input);
  std::int64_t input_size, output_size, output_size_per_partition;
  int tp_size, tp_rank;
  bool gather_output;
  bool sequence_parallel;
  torch::Tensor weight;  // [output/tp, input]
  torch::Tensor bias;    // [output/tp], or undefined
};
TORCH_MODULE(ColumnParallelLinear);

class RowParallelLinearImpl : public torch::nn::Module {
 public:
  // input_is_parallel: the input already holds this rank's slice of the input features (the
  // output of a ColumnParallelLinear without gather); otherwise it is split here.
  RowParallelLinearImpl(std::int64_t input_size, std::int64_t output_size, int tp_size, int tp_rank,
                        bool input_is_parallel = true, bool bias = true, bool sequence_parallel = false);
  torch::Tensor forward(const torch::Tensor& input);
  // This rank's partial product, before the reduction and the bias: what Megatron's
  // sequence-parallel layers reduce-scatter over the tokens instead of all-reducing.
  torch::Tensor forward_unreduced(const torch::Tensor& input);
  std::int64_t input_size, output_size, input_size_per_partition;
  int tp_size, tp_rank;
  bool input_is_parallel;
  bool sequence_parallel;
  torch::Tensor weight;  // [output, input/tp]
  torch::Tensor bias;    // [output], added once after the all-reduce
};
TORCH_MODULE(RowParallelLinear);

class VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  VocabParallelEmbeddingImpl(std::int64_t num_embeddings, std::int64_t embedding_dim, int tp_size, int tp_rank,
                             bool sequence_parallel = false);
  torch::Tensor forward(const torch::Tensor& indices);
  std::int64_t num_embeddings, embedding_dim, num_embeddings_per_partition;
  int tp_size, tp_rank;
  bool sequence_parallel;
  torch::Tensor weight;  // [vocab/tp, dim]
};
TORCH_MODULE(VocabParallelEmbedding);

}  // namespace syntorch::parallel
