"""torch.distributed for a one-process run (what syntorch.run gives a script today): a world of
one, where every collective is a no-op, as it is for one rank in PyTorch. Many ranks from Python
are not supported yet: init_process_group with a world_size above 1 raises NotImplementedError."""

import os

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.distributed")

_initialized = [False]


class ReduceOp:
    SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"


class ProcessGroup:
    def __init__(self, ranks):
        self.ranks = list(ranks)

    def size(self):
        return len(self.ranks)

    def rank(self):
        return 0


_WORLD = ProcessGroup([0])
group = type("group", (), {"WORLD": _WORLD})


def is_available():
    return True


def is_initialized():
    return _initialized[0]


def is_nccl_available():
    return True


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, **kwargs):
    world = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "1"))
    if world != 1:
        raise NotImplementedError(f"torch.distributed.init_process_group: a world of {world} processes is not "
                                  "supported from Python yet (one process is)")
    _initialized[0] = True


def destroy_process_group(group=None):
    _initialized[0] = False


def get_rank(group=None):
    return 0


def get_world_size(group=None):
    return 1


def new_group(ranks=None, **kwargs):
    if ranks is not None and list(ranks) != [0]:
        raise NotImplementedError(f"torch.distributed.new_group: ranks {list(ranks)} in a world of one")
    return _WORLD


def barrier(group=None, **kwargs):
    return None


def _one_rank(tensor, *args, **kwargs):
    return None  # a collective over one rank moves nothing


all_reduce = reduce = broadcast = _one_rank


def all_gather(tensor_list, tensor, group=None, async_op=False):
    if len(tensor_list) != 1:
        raise RuntimeError(f"all_gather: expected a list of 1 tensor (the world size), got {len(tensor_list)}")
    tensor_list[0].copy_(tensor)


def send(tensor, dst, group=None, tag=0):
    raise RuntimeError(f"send: there is no rank {dst} in a world of one")


def recv(tensor, src=None, group=None, tag=0):
    raise RuntimeError(f"recv: there is no rank {src} in a world of one")
