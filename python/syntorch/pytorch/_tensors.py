"""Real PyTorch tensors and their syntorch mirrors: dtypes, and the mirror each real tensor carries.

A real tensor seen by the bridge carries its syntorch tensor as an attribute, so the mirror lives
exactly as long as the real tensor (autograd's saved tensors included) and the simulated caching
allocator frees it when PyTorch would."""

import torch

import _syntorch

ATTR = "_syntorch_mirror"

# Real dtypes and the syntorch dtype of the same element size that stands for them. The ones with
# no exact counterpart are sized alike (memory and traffic are right; the arithmetic is the
# stand-in's).
_DTYPES = {
    torch.float32: _syntorch.float32, torch.float16: _syntorch.float16, torch.bfloat16: _syntorch.bfloat16,
    torch.float64: _syntorch.float64, torch.int64: _syntorch.int64, torch.int32: _syntorch.int32,
    torch.int8: _syntorch.int8, torch.uint8: _syntorch.int8, torch.bool: _syntorch.bool,
    torch.int16: _syntorch.float16, torch.complex64: _syntorch.complex64, torch.complex128: _syntorch.complex128,
    torch.complex32: _syntorch.float32,
}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _syntorch.float8_e4m3fn


def sdtype(dtype):
    """The syntorch dtype standing for a real one."""
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"syntorch.pytorch: tensors of dtype {dtype} are not supported") from None


# The bridge's runs, counted: a mirror belongs to the run that made it (a real tensor can outlive a
# run and come back in the next, where its old mirror means nothing).
_run = [0]


def begin_run():
    """Starts a new run of the bridge: mirrors made before no longer count."""
    _run[0] += 1


def mirror_of(t):
    """t's syntorch tensor in this run, or None when the bridge has not seen t in it yet."""
    entry = t.__dict__.get(ATTR)
    return entry[1] if entry is not None and entry[0] == _run[0] else None


def set_mirror(t, s):
    t.__dict__[ATTR] = (_run[0], s)


def extent(t):
    """Elements of storage t's layout reaches (offset included)."""
    if t.numel() == 0:
        return t.storage_offset()
    return t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def adopt(t, weight=False):
    """A mirror for a real tensor the bridge meets for the first time (a program's input, a
    parameter, a constant): allocated on the simulated device (under weights for a parameter or
    buffer), with t's layout."""
    dtype = sdtype(t.dtype)
    contiguous = t.is_contiguous() and t.storage_offset() == 0
    sizes = list(t.shape) if contiguous else [extent(t)]
    if weight:
        s = _syntorch._parameter(sizes, dtype, "cuda", False)
    else:
        s = _syntorch._empty(sizes, dtype, "cuda")
    if not contiguous:
        s = _syntorch._aten_as_strided(s, list(t.shape), list(t.stride()), t.storage_offset(), "aten::as_strided")
    set_mirror(t, s)
    return s


def to_meta_args(x):
    """x with every CPU (non-meta) tensor replaced by a meta tensor of its layout (0-dim ones kept:
    PyTorch mixes them with meta tensors); a replaced tensor's stand-in shares its bridge mirror and
    IR name."""
    if isinstance(x, torch.Tensor):
        if x.device.type == "meta" or x.dim() == 0:
            return x
        stand_in = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        stand_in.__dict__.update(x.__dict__)
        return stand_in
    if isinstance(x, (list, tuple)):
        return type(x)(to_meta_args(y) for y in x)
    if isinstance(x, dict):
        return {k: to_meta_args(v) for k, v in x.items()}
    return x


def run_on_meta(func, args, kwargs):
    """Runs an ATen op for its outputs' shapes: (outputs, args, kwargs as run). A tensor the program
    made on the CPU (a plain attribute, a constant) beside meta ones runs as its meta stand-in."""
    try:
        return func(*args, **kwargs), args, kwargs
    except RuntimeError as e:
        if "devices" not in str(e):
            raise
        args, kwargs = to_meta_args(args), to_meta_args(kwargs)
        return func(*args, **kwargs), args, kwargs
