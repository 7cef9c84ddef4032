#include "syntorch/parallel/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "syntorch/torch/ops.hpp"

namespace syntorch::parallel {

namespace {
// Megatron's process-wide parallel_state, one per rank program (each runs on its own thread, as
// each Megatron rank is its own process); initialize_model_parallel sets it afresh for a run.
thread_local ParallelState t_state;

ProcessGroup make_group(runtime::RankContext* ctx, std::vector<int> ranks, int me) {
  ProcessGroup g;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == me) g.rank = static_cast<int>(i);
  }
  if (ctx) g.id = ctx->new_group(ranks);
  g.ranks = std::move(ranks);
  return g;
}

runtime::OpDesc comm_op(runtime::OpKind kind, const torch::Tensor& t, int ranks, std::uint64_t bytes) {
  runtime::OpDesc op;
  op.kind = kind;
  op.dtype = t.runtime_dtype();
  op.ranks = static_cast<std::uint32_t>(ranks);
  op.bytes = bytes;
  return op;
}
}  // namespace

int ParallelState::next_stage_rank() const { return (rank + dp_size * tp_size) % world_size; }
int ParallelState::prev_stage_rank() const { return (rank - dp_size * tp_size + world_size) % world_size; }

const ParallelState& initialize_model_parallel(int tp, int pp, int ep) {
  runtime::RankContext* ctx = runtime::current_rank();
  const int world = ctx ? ctx->world_size() : 1;
  const int rank = ctx ? ctx->rank() : 0;
  if (tp < 1 || pp < 1 || world % (tp * pp) != 0) {
    throw std::invalid_argument(fmt::format("initialize_model_parallel: tensor parallel {} x pipeline parallel {} does "
                                            "not divide the world of {} rank(s)",
                                            tp, pp, world));
  }
  if (ep < 1 || tp % ep != 0) {
    throw std::invalid_argument(
        fmt::format("initialize_model_parallel: expert parallel {} does not divide tensor parallel {}", ep, tp));
  }
  ParallelState s;
  s.world_size = world;
  s.rank = rank;
  s.tp_size = tp;
  s.pp_size = pp;
  s.dp_size = world / (tp * pp);
  s.tp_rank = rank % tp;
  s.dp_rank = (rank / tp) % s.dp_size;
  s.pp_rank = rank / (tp * s.dp_size);
  // Every rank creates every group, in the same order, as torch.distributed.new_group requires.
  for (int p = 0; p < pp; ++p) {
    for (int d = 0; d < s.dp_size; ++d) {
      std::vector<int> ranks;
      for (int t = 0; t < tp; ++t) ranks.push_back(p * s.dp_size * tp + d * tp + t);
      if (p == s.pp_rank && d == s.dp_rank) s.tp_group = make_group(ctx, ranks, rank);
      else if (ctx) ctx->new_group(ranks);
    }
  }
  for (int p = 0; p < pp; ++p) {
    for (int t = 0; t < tp; ++t) {
      std::vector<int> ranks;
      for (int d = 0; d < s.dp_size; ++d) ranks.push_back(p * s.dp_size * tp + d * tp + t);
      if (p == s.pp_rank && t == s.tp_rank) s.dp_group = make_group(ctx, ranks, rank);
      else if (ctx) ctx->new_group(ranks);
    }
  }
  for (int d = 0; d < s.dp_size; ++d) {
    for (int t = 0; t < tp; ++t) {
      std::vector<int> ranks;
      for (int p = 0; p < pp; ++p) ranks.push_back(p * s.dp_size * tp + d * tp + t);
      if (d == s.dp_rank && t == s.tp_rank) s.pp_group = make_group(ctx, ranks, rank);
      else if (ctx) ctx->new_group(ranks);
    }
  }
  // Expert groups, only when experts are parallel (dense runs keep their group numbering).
  s.ep_size = ep;
  s.etp_size = tp / ep;
  s.ep_rank = s.tp_rank / s.etp_size;
  s.etp_rank = s.tp_rank % s.etp_size;
  s.ep_group = ProcessGroup{{}, {rank}, 0};  // a group of one: its collectives return at once, its id unused
  s.etp_group = s.tp_group;
  if (ep > 1) {
    for (int base = 0; base < world; base += tp) {
      for (int t = 0; t < s.etp_size; ++t) {
        std::vector<int> ranks;
        for (int e = 0; e < ep; ++e) ranks.push_back(base + e * s.etp_size + t);
        if (base == rank - s.tp_rank && t == s.etp_rank) s.ep_group = make_group(ctx, ranks, rank);
        else if (ctx) ctx->new_group(ranks);
      }
      for (int e = 0; e < ep; ++e) {
        std::vector<int> ranks;
        for (int t = 0; t < s.etp_size; ++t) ranks.push_back(base + e * s.etp_size + t);
        if (base == rank - s.tp_rank && e == s.ep_rank) s.etp_group = make_group(ctx, ranks, rank);
        else if (ctx) ctx->new_group(ranks);
      }
    }
  }
  t_state = std::move(s);
  return t_state;
}

const ParallelState& state() { return t_state; }

void set_virtual_pipeline_model_parallel_size(int vp_size) {
  if (vp_size < 1) throw std::invalid_argument(fmt::format("virtual pipeline size must be at least 1, got {}", vp_size));
  t_state.vp_size = vp_size;
  t_state.vp_rank = 0;
}

void set_virtual_pipeline_model_parallel_rank(int vp_rank) {
  if (vp_rank < 0 || vp_rank >= t_state.vp_size) {
    throw std::invalid_argument(
        fmt::format("virtual pipeline rank {} is outside 0..{}", vp_rank, t_state.vp_size - 1));
  }
  t_state.vp_rank = vp_rank;
}

int get_rank() {
  const runtime::RankContext* ctx = runtime::current_rank();
  return ctx ? ctx->rank() : -1;
}

int get_world_size() {
  const runtime::RankContext* ctx = runtime::current_rank();
  return ctx ? ctx->world_size() : 1;
}

ProcessGroup new_group(std::vector<int> ranks) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) throw std::invalid_argument("new_group: no run is going");
  ProcessGroup g;
  g.rank = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= ctx->world_size()) {
      throw torch::Error(fmt::format("new_group: rank {} is not in the world of {}", ranks[i], ctx->world_size()));
    }
    if (ranks[i] == ctx->rank()) g.rank = static_cast<int>(i);
  }
  g.id = ctx->new_group(ranks);
  g.ranks = std::move(ranks);
  return g;
}

void all_reduce(torch::Tensor& tensor, const ProcessGroup& group) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx || group.size() < 2 || tensor.nbytes() == 0) return;  // nothing to move, as NCCL
  ctx->collective(comm_op(runtime::OpKind::allreduce, tensor, group.size(), tensor.nbytes()), group.id,
                  "nccl:all_reduce");
}

namespace {
void rooted(runtime::OpKind kind, torch::Tensor& tensor, const ProcessGroup& group, int root, const char* name,
            const char* trace_name) {
  if (root < 0 || root >= group.size()) {
    throw std::invalid_argument(fmt::format("{}: root {} is not a member of a group of {}", name, root, group.size()));
  }
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx || group.size() < 2 || tensor.nbytes() == 0) return;  // nothing to move, as NCCL
  ctx->collective(comm_op(kind, tensor, group.size(), tensor.nbytes()), group.id, trace_name);
}
}  // namespace

void broadcast(torch::Tensor& tensor, const ProcessGroup& group, int root) {
  rooted(runtime::OpKind::broadcast, tensor, group, root, "broadcast", "nccl:broadcast");
}

void reduce(torch::Tensor& tensor, const ProcessGroup& group, int root) {
  rooted(runtime::OpKind::reduce, tensor, group, root, "reduce", "nccl:reduce");
}

torch::Tensor all_gather(const torch::Tensor& tensor, const ProcessGroup& group, std::int64_t dim) {
  if (group.size() < 2) return tensor;
  const std::int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  if (d < 0 || d >= tensor.dim()) {
    throw std::invalid_argument(fmt::format("all_gather: dim {} is out of range for a {}-d tensor", dim, tensor.dim()));
  }
  std::vector<std::int64_t> sizes = tensor.sizes();
  sizes[static_cast<std::size_t>(d)] *= group.size();
  torch::Tensor out = torch::empty(sizes, torch::TensorOptions(tensor.dtype()));
  if (runtime::RankContext* ctx = runtime::current_rank()) {
    ctx->collective(comm_op(runtime::OpKind::allgather, tensor, group.size(), out.nbytes()), group.id,
                    "nccl:all_gather");
  }
  return out;
}

torch::Tensor reduce_scatter(const torch::Tensor& tensor, const ProcessGroup& group, std::int64_t dim) {
  if (group.size() < 2) return tensor;
  const std::int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  if (d < 0 || d >= tensor.dim()) {
    throw std::invalid_argument(
        fmt::format("reduce_scatter: dim {} is out of range for a {}-d tensor", dim, tensor.dim()));
  }
  std::vector<std::int64_t> sizes = tensor.sizes();
  if (sizes[static_cast<std::size_t>(d)] % group.size() != 0) {
    throw std::invalid_argument(fmt::format("reduce_scatter: size {} of dim {} does not split over {} ranks",
                                            sizes[static_cast<std::size_t>(d)], d, group.size()));
  }
  sizes[static_cast<std::size_t>(d)] /= group.size();
  torch::Tensor out = torch::empty(sizes, torch::TensorOptions(tensor.dtype()));
  if (runtime::RankContext* ctx = runtime::current_rank()) {
    ctx->collective(comm_op(runtime::OpKind::reducescatter, tensor, group.size(), tensor.nbytes()), group.id,
                    "nccl:reduce_scatter");
  }
  return out;
}

torch::Tensor all_to_all(const torch::Tensor& input, const std::vector<std::int64_t>& output_split_rows,
                         const std::vector<std::int64_t>& input_split_rows, const ProcessGroup& group) {
  const auto n = static_cast<std::size_t>(group.size());
  if (input.dim() < 1) throw std::invalid_argument("all_to_all: the input must have at least one dim");
  if (output_split_rows.size() != n || input_split_rows.size() != n) {
    throw std::invalid_argument(fmt::format("all_to_all: {} output and {} input splits for a group of {}",
                                            output_split_rows.size(), input_split_rows.size(), n));
  }
  std::int64_t in_rows = 0, out_rows = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (input_split_rows[j] < 0 || output_split_rows[j] < 0) {
      throw std::invalid_argument("all_to_all: split sizes must not be negative");
    }
    in_rows += input_split_rows[j];
    out_rows += output_split_rows[j];
  }
  if (in_rows != input.size(0)) {
    throw std::invalid_argument(
        fmt::format("all_to_all: input splits sum to {} rows but the input has {}", in_rows, input.size(0)));
  }
  std::vector<std::int64_t> sizes = input.sizes();
  sizes[0] = out_rows;
  torch::Tensor out = torch::empty(sizes, torch::TensorOptions(input.dtype()));
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx || n < 2) return out;  // a member with nothing to send still takes part
  const std::uint64_t row_bytes = input.size(0) > 0 ? input.nbytes() / static_cast<std::uint64_t>(input.size(0)) : 0;
  runtime::OpDesc op = comm_op(runtime::OpKind::alltoall, input, group.size(), input.nbytes());
  const bool even = std::all_of(input_split_rows.begin(), input_split_rows.end(),
                                [&](std::int64_t r) { return r == input_split_rows[0]; });
  if (!even) {
    for (std::int64_t r : input_split_rows) op.splits.push_back(static_cast<std::uint64_t>(r) * row_bytes);
  }
  ctx->collective(op, group.id, "nccl:all_to_all");
  return out;
}

void send(const torch::Tensor& tensor, int dst_rank) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->send(dst_rank, tensor.nbytes(), "nccl:send");
}

void recv(torch::Tensor& tensor, int src_rank) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->recv(src_rank, tensor.nbytes(), "nccl:recv");
}

}  // namespace syntorch::parallel
