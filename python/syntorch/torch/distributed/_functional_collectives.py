"""torch.distributed._functional_collectives: collectives that return a new tensor instead of
writing their input (what tensor-parallel code under torch.compile calls). Each is the in-place
collective of torch.distributed on a result buffer of its own, simulated over the machine's links;
in a world of one it is a copy."""

import _syntorch

from . import ReduceOp, _check_op, _group, all_reduce as _all_reduce

_OPS = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "max": ReduceOp.MAX, "min": ReduceOp.MIN}


def _op(name, reduce_op):
    op = _OPS.get(reduce_op.lower()) if isinstance(reduce_op, str) else reduce_op
    if op is None:
        raise ValueError(f"{name}: unknown reduceOp {reduce_op!r} (expected one of {', '.join(_OPS)})")
    _check_op(name, op)
    return op


def _process_group(name, group):
    if group is not None and not hasattr(group, "ranks"):
        raise NotImplementedError(f"{name}: group must be a ProcessGroup or None here (a list of ranks or a "
                                  f"DeviceMesh is not supported), got {type(group).__name__}")
    return group


def all_reduce(self, reduceOp, group, tag=""):  # noqa: N803 (PyTorch's names)
    """A new tensor holding the reduction of every member's `self`."""
    op = _op("all_reduce", reduceOp)
    out = self.clone()
    _all_reduce(out, op, _process_group("all_reduce", group))
    return out


def all_gather_tensor(self, gather_dim, group, tag=""):
    """Every member's `self` concatenated along gather_dim."""
    g = _group(_process_group("all_gather_tensor", group))
    if g is None:
        return self.clone()
    return _syntorch.dist_all_gather(self, g, gather_dim)


def reduce_scatter_tensor(self, reduceOp, scatter_dim, group, tag=""):  # noqa: N803
    """The reduction of every member's `self`, each member keeping its slice along scatter_dim."""
    _op("reduce_scatter_tensor", reduceOp)
    g = _group(_process_group("reduce_scatter_tensor", group))
    if g is None:
        return self.clone()
    if self.shape[scatter_dim] % g.size():
        raise RuntimeError(f"reduce_scatter_tensor: dimension {scatter_dim} of size {self.shape[scatter_dim]} does "
                           f"not divide by the group's {g.size()} ranks")
    return _syntorch.dist_reduce_scatter(self, g, scatter_dim)


def wait_tensor(tensor):
    """The collective's result, complete (the simulated collectives are ordered on the stream)."""
    return tensor


def all_reduce_coalesced(self, reduceOp, group, tag=""):  # noqa: N803
    return [all_reduce(t, reduceOp, group, tag) for t in self]


def all_gather_into_tensor_coalesced(self, group, tag=""):
    return [all_gather_tensor(t, 0, group, tag) for t in self]


__all__ = ["all_reduce", "all_gather_tensor", "reduce_scatter_tensor", "wait_tensor", "all_reduce_coalesced",
           "all_gather_into_tensor_coalesced"]
