"""torch.distributed over the run's ranks. Under `python -m syntorch.run --nproc N` every rank's
script runs on one simulator and the collectives are simulated over the machine's links (NCCL's
algorithms, as the C++ layers run them); in a one-process run the world is one rank and every
collective is a no-op, as it is for one rank in PyTorch."""

import os

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.distributed")

import threading as _threading


class _State(_threading.local):
    def __init__(self):
        self.initialized = False
        self.world = None  # the WORLD group's handle in a many-rank run


_state = _State()


class ReduceOp:
    SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"


def _world_size():
    return _syntorch.current_world_size()


def _rank():
    r = _syntorch.current_rank_index()
    return 0 if r < 0 else r


class ProcessGroup:
    def __init__(self, ranks, impl=None):
        self.ranks = list(ranks)
        self._impl = impl

    def size(self):
        return len(self.ranks)

    def rank(self):
        return self.ranks.index(_rank()) if _rank() in self.ranks else -1


class group:
    WORLD = None


class Work:
    """What a collective called with async_op=True returns: the collective is already queued on
    the current stream, so wait() (ordering later work after it, as PyTorch's does on the current
    stream) has nothing more to do."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _done(async_op):
    return Work() if async_op else None


def is_available():
    return True


def is_initialized():
    return _state.initialized


def is_nccl_available():
    return True


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, **kwargs):
    world = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", _world_size()))
    if world != _world_size():
        raise NotImplementedError(f"torch.distributed.init_process_group: a world of {world} processes in a run of "
                                  f"{_world_size()} rank(s) (python -m syntorch.run --nproc {world} runs that many)")
    if rank not in (-1, _rank()):
        raise RuntimeError(f"init_process_group: rank {rank} given to the thread of rank {_rank()}")
    _state.initialized = True
    _state.world = new_group(list(range(world)))


def destroy_process_group(group=None):
    _state.initialized = False


def get_rank(group=None):
    return _rank() if group is None else group.rank()


def get_world_size(group=None):
    return _world_size() if group is None else group.size()


def new_group(ranks=None, **kwargs):
    """Every rank must call it, in the same order, as in PyTorch."""
    ranks = list(range(_world_size())) if ranks is None else sorted(int(r) for r in ranks)
    import syntorch
    if getattr(syntorch._rank_local, "mirrored", False) and 0 not in ranks:
        raise ValueError(f"torch.distributed.new_group: group {ranks} leaves out rank 0, whose program stands for "
                         "every rank in a mirrored run (launch(mirror=True), syntorch.run --mirror): its collectives "
                         "would never run; run every rank's program instead")
    if _world_size() == 1:
        if ranks != [0]:
            raise NotImplementedError(f"torch.distributed.new_group: ranks {ranks} in a world of one")
        return ProcessGroup(ranks)
    return ProcessGroup(ranks, _syntorch.dist_new_group(ranks))


def _group(group):
    g = group if group is not None else _state.world
    if g is None:
        if _world_size() == 1:
            return None
        raise RuntimeError("Default process group has not been initialized, please make sure to call "
                           "init_process_group.")
    return g._impl


def _check_op(name, op):
    if op not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN):
        raise NotImplementedError(f"torch.distributed.{name}: op {op!r} is not supported")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_op("all_reduce", op)
    g = _group(group)
    if g is not None:
        _syntorch.dist_all_reduce(tensor, g)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    g = _group(group)
    n = 1 if g is None else g.size()
    if len(tensor_list) != n:
        raise RuntimeError(f"all_gather: expected a list of {n} tensors (the group's size), got {len(tensor_list)}")
    if g is None:
        tensor_list[0].copy_(tensor)
        return _done(async_op)
    gathered = _syntorch.dist_all_gather(tensor.unsqueeze(0), g, 0)  # a flat buffer, then a copy out each
    for i, t in enumerate(tensor_list):
        t.copy_(gathered.select(0, i))
    return _done(async_op)


def _into(name, output, input, group, async_op, collective, gathers):
    """A collective writing a caller's buffer (all_gather_into_tensor, reduce_scatter_tensor): the
    output's size checked against the group's; in a world of one, a copy. The extension's
    collective makes its own result buffer, which stands for `output` (values are not simulated)."""
    g = _group(group)
    n = 1 if g is None else g.size()
    expected = input.numel() * n if gathers else input.numel() // n
    if output.numel() != expected or (not gathers and input.numel() % n):
        raise RuntimeError(f"{name}: output has {output.numel()} elements; an input of {input.numel()} over a group "
                           f"of {n} needs {expected}")
    if g is None:
        output.copy_(input)
    else:
        collective(input, g, 0)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    return _into("all_gather_into_tensor", output_tensor, input_tensor, group, async_op, _syntorch.dist_all_gather,
                 True)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    _check_op("reduce_scatter_tensor", op)
    return _into("reduce_scatter_tensor", output, input, group, async_op, _syntorch.dist_reduce_scatter, False)


def _root(name, rank, group):
    """A global rank's position in the group (torch.distributed's src/dst), checked."""
    members = group.ranks if group is not None else list(range(_world_size()))
    if rank not in members:
        raise ValueError(f"torch.distributed.{name}: rank {rank} is not in the group {members}")
    return members.index(rank)


def broadcast(tensor, src, group=None, async_op=False):
    """The src rank's tensor into every member's, in place: NCCL's pipelined chain along the ring."""
    root = _root("broadcast", src, group)
    g = _group(group)
    if g is not None:
        _syntorch.dist_broadcast(tensor, g, root)
    return _done(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """NCCL's barrier: an all-reduce of one element."""
    import syntorch.torch as torch
    g = _group(group)
    if g is not None:
        _syntorch.dist_all_reduce(torch.zeros(1), g)
    return _done(async_op)


def send(tensor, dst, group=None, tag=0):
    if _world_size() == 1:
        raise RuntimeError(f"send: there is no rank {dst} in a world of one")
    _syntorch.dist_send(tensor, dst)


def recv(tensor, src=None, group=None, tag=0):
    if src is None:
        raise NotImplementedError("torch.distributed.recv: from any source (src=None) is not supported")
    if _world_size() == 1:
        raise RuntimeError(f"recv: there is no rank {src} in a world of one")
    _syntorch.dist_recv(tensor, src)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Every member's tensor summed (op) into the dst rank's: NCCL's pipelined chain along the ring."""
    _check_op("reduce", op)
    root = _root("reduce", dst, group)
    g = _group(group)
    if g is not None:
        _syntorch.dist_reduce(tensor, g, root)
    return _done(async_op)


from . import _functional_collectives  # noqa: E402,F401
from . import algorithms  # noqa: E402,F401
