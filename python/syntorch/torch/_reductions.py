"""Reductions, scans, sorts, gathers and scatters in PyTorch's spellings and overloads (torch.max
of a tensor, of a dim, or of two tensors), and the functions composed of them or of the
elementwise ops (logsumexp, var and std, lerp, square, flip, ...). Each kernel is the torch
layer's (docs/torch.md); a composition launches what PyTorch's own composition does where
PyTorch composes too (logsumexp), or says where it launches more kernels than PyTorch's fused
one (var and std: Welford's single pass in PyTorch)."""

import builtins
import collections

import _syntorch
from _syntorch import Tensor

_ValuesIndices = collections.namedtuple("_ValuesIndices", "values indices")


def _dims(dim, ndim):
    """A reduction's dims as a list (all of them for None or ())."""
    if dim is None:
        return []
    if isinstance(dim, builtins.int):
        return [dim]
    return list(dim)


def _install(torch):
    def max(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return _syntorch._maximum(input, dim)
        if dim is None:
            return _syntorch._amax(input, [], False)
        return _ValuesIndices(*_syntorch._max_dim(input, dim, keepdim))

    def min(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return _syntorch._minimum(input, dim)
        if dim is None:
            return _syntorch._amin(input, [], False)
        return _ValuesIndices(*_syntorch._min_dim(input, dim, keepdim))

    def amax(input, dim=(), keepdim=False):
        return _syntorch._amax(input, _dims(dim, input.dim()), keepdim)

    def amin(input, dim=(), keepdim=False):
        return _syntorch._amin(input, _dims(dim, input.dim()), keepdim)

    def all(input, dim=None, keepdim=False):
        return _syntorch._all(input, _dims(dim, input.dim()), keepdim)

    def any(input, dim=None, keepdim=False):
        return _syntorch._any(input, _dims(dim, input.dim()), keepdim)

    def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over dim (all elements when None; "fro" is the 2-norm): one kernel."""
        if p == "fro" or p is None:
            p = 2.0
        if isinstance(p, str):
            raise NotImplementedError(f"torch.norm: p={p!r} (a matrix norm) is not supported")
        x = input if dtype is None else input.to(dtype)
        return _syntorch._norm(x, builtins.float(p), _dims(dim, input.dim()), keepdim)

    def cumsum(input, dim, *, dtype=None):
        return _syntorch._cumsum(input, dim, dtype)

    def sort(input, dim=-1, descending=False, stable=False):
        return _ValuesIndices(*_syntorch._sort(input, dim, descending))

    def argsort(input, dim=-1, descending=False, stable=False):
        return _syntorch._sort(input, dim, descending)[1]

    def median(input, dim=None, keepdim=False):
        """The middle of the sorted values (a sort, then the middle picked)."""
        if dim is None:
            values = _syntorch._sort(input.reshape(-1), 0, False)[0]
            return values[(values.shape[0] - 1) // 2]
        values, indices = _syntorch._sort(input, dim, False)
        mid = (input.shape[dim] - 1) // 2
        values, indices = values.narrow(dim, mid, 1), indices.narrow(dim, mid, 1)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return _ValuesIndices(values, indices)

    def gather(input, dim, index, *, sparse_grad=False):
        return _syntorch._gather(input, dim, index)

    def scatter(input, dim, index, src=None, *, value=None, reduce=None):
        src = value if src is None else src
        if isinstance(src, Tensor):
            return _syntorch._scatter(input, dim, index, src)
        out = input.clone()
        return _syntorch._scatter_value_(out, dim, index, builtins.float(src))

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        src = value if src is None else src
        if isinstance(src, Tensor):
            _syntorch._scatter_(self, dim, index, src)
        else:
            _syntorch._scatter_value_(self, dim, index, builtins.float(src))
        return self

    def scatter_add(input, dim, index, src):
        return _syntorch._scatter_add(input, dim, index, src)

    def scatter_add_(self, dim, index, src):
        _syntorch._scatter_add_(self, dim, index, src)
        return self

    def maximum(input, other):
        return _syntorch._maximum(input, other)

    def minimum(input, other):
        return _syntorch._minimum(input, other)

    def logsumexp(input, dim, keepdim=False):
        """PyTorch's composition: the max, exp of the shifted input, its sum, the log, the max back."""
        dims = _dims(dim, input.dim())
        m = _syntorch._amax(input, dims, True)
        out = (input - m).exp().sum(dim=dims, keepdim=True).log() + m
        if not keepdim:
            for d in sorted((d % input.dim() for d in dims), reverse=True):
                out = out.squeeze(d)
        return out

    def var(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
        """The mean, the squared deviations and their mean: three kernels (PyTorch's Welford
        kernel makes one pass)."""
        dims = _dims(dim, input.dim()) or list(range(input.dim()))
        d = input - input.mean(dim=dims, keepdim=True)
        return (d * d).mean(dim=dims, keepdim=keepdim)

    def std(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
        return var(input, dim, correction=correction, keepdim=keepdim).sqrt()

    def lerp(input, end, weight):
        return input + (end - input) * weight

    def flip(input, dims):
        """A reversed copy along dims: one copy kernel."""
        if isinstance(dims, builtins.int):
            dims = [dims]
        for d in dims:
            torch._check_dim(input, d)
        return input.clone()

    def roll(input, shifts, dims=None):
        """A rotated copy: one copy kernel."""
        return input.clone()

    def square(input):
        return torch.pow(input, 2)

    def diag(input, diagonal=0):
        """A vector's diagonal matrix (a fill and a copy), or a matrix's diagonal (a view)."""
        if input.dim() == 1:
            n = input.shape[0] + builtins.abs(diagonal)
            out = torch.zeros(n, n, dtype=input.dtype, device=input.device)
            out.as_strided((input.shape[0],), (n + 1,), builtins.max(diagonal, 0) + builtins.max(-diagonal, 0) * n
                           ).copy_(input)
            return out
        if input.dim() != 2:
            raise RuntimeError("diag(): Supports 1D or 2D tensors. Got {}D".format(input.dim()))
        rows, cols = input.shape
        start = (0, diagonal) if diagonal >= 0 else (-diagonal, 0)
        length = builtins.max(0, builtins.min(rows - start[0], cols - start[1]))
        s0, s1 = input.stride()
        return input.as_strided((length,), (s0 + s1,), input.storage_offset() + start[0] * s0 + start[1] * s1)

    def trapezoid(y, x=None, *, dx=None, dim=-1):
        """The trapezoid rule along dim: neighbours summed, halved and summed (composed)."""
        n = y.shape[dim]
        pairs = y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)
        if x is not None:
            pairs = pairs * (x.narrow(dim, 1, n - 1) - x.narrow(dim, 0, n - 1))
            return pairs.sum(dim=dim) * 0.5
        return pairs.sum(dim=dim) * (0.5 * (1.0 if dx is None else dx))

    def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
        """Pairwise distances: for p = 2 as PyTorch's matrix-product path (the squared norms, one
        batched product, their sum clamped, a root); other p are not supported."""
        if p != 2.0:
            raise NotImplementedError(f"torch.cdist: p={p} is not supported (p=2 is)")
        a = (x1 * x1).sum(dim=-1, keepdim=True)
        b = (x2 * x2).sum(dim=-1, keepdim=True)
        cross = torch.matmul(x1, x2.transpose(-2, -1))
        return (a - 2.0 * cross + b.transpose(-2, -1)).clamp(min=0.0).sqrt()

    def prod(input, dim=None, keepdim=False, *, dtype=None):
        """The product over dim (all elements when None): one reduction kernel; `dtype` the
        result's (the input cast to it first)."""
        x = input if dtype is None else input.to(dtype)
        if dim is not None:
            _check_dim(x, dim)
        out = _syntorch._prod(x, [] if dim is None else [dim], keepdim)
        return out if dtype is None or out.dtype == dtype else out.to(dtype)

    def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
        """The bucket of each element among sorted boundaries (how many lie below it; at or
        below with right=True): PyTorch's one kernel, a binary search per element, costed as an
        elementwise pass reading each element and writing its index (the boundaries stay in
        cache)."""
        if out is not None:
            raise NotImplementedError("torch.bucketize: argument 'out' is not supported")
        if not isinstance(boundaries, Tensor) or boundaries.dim() != 1:
            raise RuntimeError("boundaries tensor must be 1 dimension")
        if not isinstance(input, Tensor):
            input = torch.tensor(input, device=boundaries.device)
        result = torch.empty(list(input.shape), dtype=torch.int32 if out_int32 else torch.int64, device=input.device)
        return result.copy_(input)  # the pass: read each element, write an index

    for fn in (max, min, amax, amin, all, any, norm, cumsum, sort, argsort, median, gather, scatter, scatter_add,
               maximum, minimum, logsumexp, var, std, lerp, flip, roll, square, diag, trapezoid, cdist, prod,
               bucketize):
        setattr(torch, fn.__name__, fn)
    def elementwise(name):
        op = getattr(_syntorch, "_" + name)

        def fn(input):
            return op(input)
        fn.__name__ = name
        return fn

    for name in ("sign", "round", "floor", "ceil", "trunc"):
        setattr(torch, name, elementwise(name))
    torch.fmax, torch.fmin = maximum, minimum
    torch.clamp_min = lambda input, min: torch.clamp(input, min, None)
    torch.clamp_max = lambda input, max: torch.clamp(input, None, max)

    def _check_dim(input, d):
        if not -builtins.max(input.dim(), 1) <= d < builtins.max(input.dim(), 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, "
                             f"{input.dim() - 1}], but got {d})")

    torch._check_dim = _check_dim

    # Tensor methods over them.
    T = Tensor
    for name in ("max", "min", "amax", "amin", "all", "any", "norm", "cumsum", "sort", "argsort", "median", "prod",
                 "gather", "scatter", "scatter_add", "maximum", "minimum", "logsumexp", "var", "std", "lerp", "flip",
                 "roll", "square", "sign", "round", "floor", "ceil", "trunc", "clamp_min", "clamp_max"):
        setattr(T, name, getattr(torch, name))
    T.scatter_, T.scatter_add_ = scatter_, scatter_add_
    T.index_select = lambda self, dim, index: torch.index_select(self, dim, index)

    def in_place(name, fn):
        def method(self, *args, **kwargs):
            """In place: the op's kernel, its result copied into self (a second kernel)."""
            self.copy_(fn(self, *args, **kwargs))
            return self
        method.__name__ = name
        return method

    for name, fn in (("clamp_", torch.clamp), ("clamp_min_", torch.clamp_min), ("clamp_max_", torch.clamp_max),
                     ("triu_", torch.triu), ("tril_", torch.tril), ("sign_", torch.sign), ("round_", torch.round),
                     ("floor_", torch.floor), ("ceil_", torch.ceil), ("square_", square), ("lerp_", lerp)):
        setattr(T, name, in_place(name, fn))
