"""torch.multiprocessing: spawn(fn, args, nprocs) runs fn(rank, *args) for each rank, every rank on
a thread of its own on one simulator (as syntorch.launch does), the ranks on the machine's first
nprocs devices; a rank's error fails the spawn naming the rank. The start methods are Python's
(nothing is forked: ranks are threads)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.multiprocessing")

_start_method = ["spawn"]


class ProcessRaisedException(Exception):
    pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    import sys
    import syntorch
    if syntorch.in_rank_program():
        raise RuntimeError("torch.multiprocessing.spawn: the ranks of a run cannot spawn ranks of their own")
    init = dict(syntorch._init_args)
    try:
        stats = syntorch.launch(lambda rank: fn(rank, *args), nprocs, hw=init.get("hw"), set=init.get("set", ()),
                                framework=init.get("framework", "eager"), trace=init.get("trace"),
                                policy=init.get("policy"))
    except RuntimeError as e:
        raise ProcessRaisedException(str(e)) from e
    if stats.get("console"):
        print(stats["console"], file=sys.stderr)
    return None


def set_start_method(method, force=False):
    _start_method[0] = method


def get_start_method(allow_none=False):
    return _start_method[0]


def get_all_start_methods():
    return ["spawn", "fork", "forkserver"]


def cpu_count():
    import os
    return os.cpu_count()
