"""torch.linalg: vector norms (matrix decompositions are not modelled)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.linalg")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    import syntorch.torch as torch
    if ord in (float("inf"), -float("inf")):
        return torch.amax(x.abs(), () if dim is None else dim, keepdim)
    return torch.norm(x, float(ord), dim, keepdim, dtype)


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (the 2-norm of all elements by default); matrix orders are not supported."""
    if isinstance(ord, str) or (dim is not None and not isinstance(dim, int) and len(dim) == 2 and ord is not None):
        raise NotImplementedError("torch.linalg.norm: matrix norms are not supported")
    return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
