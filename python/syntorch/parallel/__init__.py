"""syntorch.parallel: Megatron's tensor-parallel layers as one rank's shard.

    layer = ColumnParallelLinear(input_size=10, output_size=5, tp_size=2, tp_rank=0)

builds rank `tp_rank`'s share of the weight (output features split over tp_size ranks, the
remainder to the first ranks) and runs that rank's GEMM. The collectives a layer ends with (the
column layer's gather_output, the row layer's and the vocabulary embedding's all-reduce) run over
`group` (default: the world, once torch.distributed is initialised in a run of tp_size ranks,
`python -m syntorch.run --nproc`); a one-rank run has no other ranks, and asking for them there
raises NotImplementedError."""

import _syntorch
import syntorch.torch as torch
import syntorch.torch.distributed as dist
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F

__all__ = ["ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding", "shard_size",
           "gather_from_tensor_model_parallel_region", "reduce_from_tensor_model_parallel_region"]


def shard_size(total, tp_size, tp_rank):
    """Rank tp_rank's share of `total` split over tp_size ranks (the first ranks one larger)."""
    if tp_size < 1 or not 0 <= tp_rank < tp_size:
        raise ValueError(f"expected 0 <= tp_rank < tp_size, got tp_rank={tp_rank}, tp_size={tp_size}")
    if total < tp_size:
        raise ValueError(f"cannot split {total} over {tp_size} ranks")
    return total // tp_size + (1 if tp_rank < total % tp_size else 0)


def _tp_group(layer, what, tp_size, group):
    """The group a layer's collective runs over, or NotImplementedError when the run lacks one."""
    if group is not None:
        return group
    if dist.is_initialized() and dist.get_world_size() == tp_size:
        return None  # the world
    raise NotImplementedError(f"syntorch.parallel.{layer}: {what} needs the other ranks of the tensor-parallel "
                              f"group: run {tp_size} ranks (python -m syntorch.run --nproc {tp_size}) with "
                              "torch.distributed initialised, or pass group=")


def _layer_group(layer, name, what):
    """The process group's handle a layer's closing collective runs over, found once per
    initialisation of torch.distributed (layers run every step: this is on the hot path)."""
    world = dist._state.world
    cached = layer.__dict__.get("_closing_group")
    if cached is not None and cached[0] is world:
        return cached[1]
    impl = dist._group(_tp_group(name, what, layer.tp_size, layer.group))
    object.__setattr__(layer, "_closing_group", (world, impl))
    return impl


class ColumnParallelLinear(nn.Module):
    """Y = X A with A split by columns: this rank holds [output_size / tp_size, input_size]."""

    def __init__(self, input_size, output_size, tp_size=1, tp_rank=0, bias=True, gather_output=False,
                 dtype=None, device=None, group=None):
        super().__init__()
        object.__setattr__(self, "group", group)
        self.input_size, self.output_size = input_size, output_size
        self.tp_size, self.tp_rank, self.gather_output = tp_size, tp_rank, gather_output
        self.output_size_per_partition = shard_size(output_size, tp_size, tp_rank)
        self.weight = nn._parameter(self.output_size_per_partition, input_size, device=device, dtype=dtype)
        if bias:
            self.bias = nn._parameter(self.output_size_per_partition, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.gather_output and self.tp_size > 1:
            y = _all_gather_last(y, _layer_group(self, "ColumnParallelLinear", "gather_output=True"))
        return y


class RowParallelLinear(nn.Module):
    """Y = X A with A split by rows: this rank holds [output_size, input_size / tp_size] and takes
    its shard of X (input_is_parallel); the partial products are all-reduced (reduce_results)."""

    def __init__(self, input_size, output_size, tp_size=1, tp_rank=0, bias=True, input_is_parallel=True,
                 reduce_results=True, dtype=None, device=None, group=None):
        super().__init__()
        object.__setattr__(self, "group", group)
        if not input_is_parallel:
            raise NotImplementedError("syntorch.parallel.RowParallelLinear: input_is_parallel=False is not supported")
        self.input_size, self.output_size = input_size, output_size
        self.tp_size, self.tp_rank, self.reduce_results = tp_size, tp_rank, reduce_results
        self.input_size_per_partition = shard_size(input_size, tp_size, tp_rank)
        self.weight = nn._parameter(output_size, self.input_size_per_partition, device=device, dtype=dtype)
        if bias:
            self.bias = nn._parameter(output_size, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x):
        # The bias is added once, after the partial products are summed (Megatron's order).
        y = F.linear(x, self.weight)
        if self.reduce_results and self.tp_size > 1:
            _syntorch.dist_all_reduce(y, _layer_group(self, "RowParallelLinear", "reduce_results=True (the all-reduce "
                                                      "of the partial products)"))
        return y if self.bias is None else y + self.bias


class VocabParallelEmbedding(nn.Module):
    """An embedding whose rows (the vocabulary) are split over the ranks."""

    def __init__(self, num_embeddings, embedding_dim, tp_size=1, tp_rank=0, reduce_results=True, dtype=None,
                 device=None, group=None):
        super().__init__()
        object.__setattr__(self, "group", group)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.tp_size, self.tp_rank, self.reduce_results = tp_size, tp_rank, reduce_results
        self.num_embeddings_per_partition = shard_size(num_embeddings, tp_size, tp_rank)
        self.weight = nn._parameter(self.num_embeddings_per_partition, embedding_dim, device=device, dtype=dtype)

    def forward(self, indices):
        y = F.embedding(indices, self.weight)
        if self.reduce_results and self.tp_size > 1:
            _syntorch.dist_all_reduce(y, _layer_group(self, "VocabParallelEmbedding", "reduce_results=True (the "
                                                      "all-reduce of the looked-up rows)"))
        return y


def gather_from_tensor_model_parallel_region(x, group=None):
    """Megatron's gather: every rank's shard of the last dim, concatenated (one all-gather over
    `group`, default the world); the input itself in a one-rank run."""
    g = dist._group(group)
    return x if g is None else _all_gather_last(x, g)


def reduce_from_tensor_model_parallel_region(x, group=None):
    """Megatron's reduce: the sum of every rank's x (an all-reduce in place over `group`, default
    the world); x itself in a one-rank run."""
    dist.all_reduce(x, group=group)
    return x


def _all_gather_last(y, group_impl):
    return _syntorch.dist_all_gather(y, group_impl, -1)
