#pragma once
// Megatron-style model parallel state and the collectives of torch.distributed, over the torch
// API. Ranks are laid out as Megatron lays them out: tensor parallel innermost (consecutive
// ranks, so a TP group sits on one node's fast links), then data parallel, then pipeline
// stages outermost: rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank. Expert parallelism
// is carved out of the TP group, as Megatron-Core's MoE layers do: the tp ranks of a stage form
// ep groups of expert-parallel peers, each expert split over etp = tp / ep consecutive ranks
// (expert tensor parallelism): tp_rank = ep_rank * etp + etp_rank.
// The state is per rank (each rank's program runs on its own thread), as Megatron's
// parallel_state module is per process.

#include <cstdint>
#include <string_view>
#include <vector>

#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::parallel {

// A set of ranks that run collectives together, seen from one member.
struct ProcessGroup {
  runtime::GroupId id;
  std::vector<int> ranks;  // global ranks, in group order
  int rank = 0;            // this rank's position in `ranks`
  int size() const { return static_cast<int>(ranks.size()); }
};

struct ParallelState {
  int world_size = 1;
  int rank = 0;
  int tp_size = 1, tp_rank = 0;
  int pp_size = 1, pp_rank = 0;
  int dp_size = 1, dp_rank = 0;
  int ep_size = 1, ep_rank = 0;    // expert parallel, within the TP group
  int etp_size = 1, etp_rank = 0;  // expert tensor parallel: tp_size / ep_size
  // Interleaved pipelines (Narayanan et al., 2021): each rank holds vp_size model chunks, chunk v
  // of rank r being virtual stage v x pp + r; vp_rank is the chunk being built or run now.
  int vp_size = 1, vp_rank = 0;
  ProcessGroup tp_group, pp_group, dp_group;
  ProcessGroup ep_group, etp_group;  // ep_group: one rank when ep is 1; etp_group: tp_group then
  // The first (last) virtual stage: the chunk that holds the embeddings (the head).
  bool is_first_stage() const { return pp_rank == 0 && vp_rank == 0; }
  bool is_last_stage() const { return pp_rank == pp_size - 1 && vp_rank == vp_size - 1; }
  int virtual_stage() const { return vp_rank * pp_size + pp_rank; }
  int next_stage_rank() const;  // the same TP/DP position on the next (previous) stage
  int prev_stage_rank() const;
};

// Sets this rank's state (Megatron's initialize_model_parallel). world_size must be a multiple
// of tp * pp; with no simulation running (pure meta tensors) the world is one rank. Throws
// std::invalid_argument naming the sizes when they do not fit.
// expert_model_parallel_size must divide the tensor parallel size.
const ParallelState& initialize_model_parallel(int tensor_model_parallel_size, int pipeline_model_parallel_size = 1,
                                               int expert_model_parallel_size = 1);
// This rank's state (a single-rank state until initialize_model_parallel runs).
const ParallelState& state();
// Megatron's virtual pipeline: `vp_size` model chunks per rank (at least 1), and which of them is
// being built or run (0 .. vp_size - 1). Throws std::invalid_argument outside those bounds.
void set_virtual_pipeline_model_parallel_size(int vp_size);
void set_virtual_pipeline_model_parallel_rank(int vp_rank);

// torch.distributed's get_rank, get_world_size and new_group for the program on this thread: -1
// and 1 when no program runs here; new_group throws std::invalid_argument then, and torch::Error
// for a rank outside the world. The group's `rank` is -1 on a rank outside it.
int get_rank();
int get_world_size();
ProcessGroup new_group(std::vector<int> ranks);

// torch.distributed-style collectives on the current rank's device stream. In-place on `tensor`
// where torch.distributed is; a group of one costs nothing.
void all_reduce(torch::Tensor& tensor, const ProcessGroup& group);
// The root member's `tensor` into every member's (broadcast), every member's summed into the
// root's (reduce), in place: `root` is a position in the group (0 <= root < size).
void broadcast(torch::Tensor& tensor, const ProcessGroup& group, int root);
void reduce(torch::Tensor& tensor, const ProcessGroup& group, int root);
// Concatenates every member's `tensor` along `dim` (a new tensor).
torch::Tensor all_gather(const torch::Tensor& tensor, const ProcessGroup& group, std::int64_t dim = -1);
// Sums every member's `tensor` and leaves each its 1/n share along `dim` (a new tensor), as
// torch.distributed.reduce_scatter_tensor does; `dim` must divide by the group's size.
torch::Tensor reduce_scatter(const torch::Tensor& tensor, const ProcessGroup& group, std::int64_t dim = 0);
// torch.distributed.all_to_all_single along dim 0: this rank sends input_split_rows[j] rows of
// `input` (in order) to member j and receives output_split_rows[j] rows from it (a new tensor
// of their sum). Members' input splits may differ (all-to-allv).
torch::Tensor all_to_all(const torch::Tensor& input, const std::vector<std::int64_t>& output_split_rows,
                         const std::vector<std::int64_t>& input_split_rows, const ProcessGroup& group);
// Point-to-point on the device stream, as NCCL send/recv: both sides wait for each other.
void send(const torch::Tensor& tensor, int dst_rank);
void recv(torch::Tensor& tensor, int src_rank);

}  // namespace syntorch::parallel
