"""PyTorch's names over syntorch's meta tensors: `import syntorch.torch as torch`."""

import builtins as _builtins
import sys as _sys

import _syntorch
from _syntorch import (Tensor, dtype, float64, double, float32, float, float16, half, bfloat16, float8_e4m3fn,
                       int8, uint8, int32, int, int64, long, bool, set_default_dtype, get_default_dtype, matmul, mm, bmm,
                       add, sub, mul, div, relu, silu, tanh, sigmoid, softmax, log_softmax, argmax, cat, stack,
                       exp, log, clamp, is_grad_enabled, is_autocast_enabled, get_autocast_dtype, eq, ne, lt, le,
                       gt, ge, where, masked_fill, tril, triu, multinomial, index_select, sqrt, rsqrt, sin, cos,
                       abs, polar, view_as_complex, view_as_real, complex64, cfloat, complex128, cdouble,
                       set_float32_matmul_precision, get_float32_matmul_precision)

import syntorch as _syntorch_package
from syntorch._scopes import CppScope as _CppScope
from syntorch._unsupported import Unsupported as _Unsupported, module_getattr as _module_getattr

__getattr__ = _module_getattr("torch")

from . import nn  # noqa: E402
from . import cuda  # noqa: E402
from . import autograd  # noqa: E402
from . import optim  # noqa: E402
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402
from . import profiler  # noqa: E402
from . import distributed  # noqa: E402
from . import backends  # noqa: E402
from . import utils  # noqa: E402
from . import serialization  # noqa: E402
from . import jit  # noqa: E402
from . import compiler  # noqa: E402
from .serialization import save, load  # noqa: E402

import threading as _threading


class _DeviceStack(_threading.local):
    """The factories' device set by `with torch.device(...)` blocks, per thread (each rank of a
    many-rank run is a thread); outside them the process's default (set_default_device)."""

    def __init__(self):
        self.stack = []


_default_device = _DeviceStack()
# syntorch's default is the simulated GPU, so that a few lines of syntorch.torch compute on it;
# `python -m syntorch.run` sets PyTorch's ("cpu") for the unmodified scripts it runs.
_process_device = ["cuda"]


def set_default_device(device):
    """The device factories make tensors on when not told (None: syntorch's default, "cuda")."""
    _process_device[0] = "cuda" if device is None else str(globals()["device"](device))


def get_default_device():
    return globals()["device"](_default_device.stack[-1] if _default_device.stack else _process_device[0])


class device:
    """A device name, as torch.device; also a context manager setting the factories' default."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif _builtins.type(type) is _builtins.int:  # torch.device(0): a CUDA device index
            type, index = "cuda", type
        name = str(type)
        if ":" in name:
            name, idx = name.split(":", 1)
            index = _builtins.int(idx)
        if name not in ("cuda", "cpu", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        self.type, self.index = name, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __enter__(self):
        _default_device.stack.append(str(self))
        return self

    def __exit__(self, *exc):
        _default_device.stack.pop()
        return False


def _device_name(d):
    if d is not None:
        return str(device(d))
    return _default_device.stack[-1] if _default_device.stack else _process_device[0]


def _ints(args):
    """PyTorch's *size or (size,) arguments as a list of ints (numpy integers included)."""
    import operator
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    try:
        return [operator.index(a) for a in args]
    except TypeError:
        raise TypeError(f"expected a sequence of integers, got {args!r}") from None


def _sizes(size):
    size = _ints(size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {size}")
    return size


def _grad(out, requires_grad):
    """A factory's requires_grad=, as PyTorch applies it (floating and complex tensors only)."""
    if requires_grad:
        if not (out.dtype.is_floating_point or out.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        out.requires_grad_(True)
    return out


def _unsupported_factory_args(name, out=None, layout=None, memory_format=None):
    """Factory arguments the simulator does not model: refused by name unless left at their default
    (a memory format other than the contiguous one included)."""
    if memory_format is not None and getattr(memory_format, "name", None) in ("contiguous_format", "preserve_format"):
        memory_format = None
    for arg, value in (("out", out), ("layout", layout), ("memory_format", memory_format)):
        if value is not None:
            raise NotImplementedError(f"torch.{name}: argument '{arg}' is not supported (got {value!r})")


def _pinned(name, device, pin_memory):
    """pin_memory=True: page-locked host memory, which only a CPU tensor can have (PyTorch's error)."""
    if pin_memory and device != "cpu":
        raise RuntimeError(f"torch.{name}: pin_memory=True is only for CPU tensors (device {device!r}): "
                           "Only dense CPU tensors can be pinned")
    return _builtins.bool(pin_memory)


def _factory(make, name):
    def factory(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False, memory_format=None, generator=None, **kwargs):
        if "size" in kwargs:  # torch.zeros(size=(2, 3))
            size = (kwargs.pop("size"),)
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        _unsupported_factory_args(name, out, layout, memory_format)
        _syntorch_package.current_session()
        name_of_device = _device_name("cpu" if pin_memory and device is None else device)
        return _grad(make(_sizes(size), dtype, name_of_device, _pinned(name, name_of_device, pin_memory)),
                     requires_grad)
    factory.__name__ = name
    return factory


empty = _factory(_syntorch._empty, "empty")
zeros = _factory(_syntorch._zeros, "zeros")
ones = _factory(_syntorch._ones, "ones")
randn = _factory(_syntorch._randn, "randn")
rand = _factory(_syntorch._rand, "rand")


def randint(low=0, high=None, size=None, *, dtype=None, device=None, requires_grad=False, generator=None):
    """torch.randint(high, size) or randint(low, high, size): int64 unless dtype says otherwise."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: expected randint(low=0, high, size)")
    _syntorch_package.current_session()
    return _grad(_syntorch._randint(_builtins.int(low), _builtins.int(high), _sizes((size,)),
                                    dtype if dtype is not None else int64, _device_name(device)), requires_grad)


def _shape_and_kind(data):
    """The shape of nested lists of numbers, and the widest kind in them (bool < int < float)."""
    if isinstance(data, (list, tuple)):
        if not data:
            return [0], 0
        parts = [_shape_and_kind(d) for d in data]
        if _builtins.any(p[0] != parts[0][0] for p in parts):
            raise ValueError(f"expected sequence of length {parts[0][0]} at dim 1 (got a ragged list)")
        return [len(data)] + parts[0][0], _builtins.max(p[1] for p in parts)
    if isinstance(data, _builtins.bool):
        return [], 0
    if isinstance(data, _builtins.int):
        return [], 1
    if isinstance(data, _builtins.float):
        return [], 2
    if isinstance(data, Tensor):
        raise NotImplementedError("torch.tensor: from a tensor; use .clone().detach()")
    raise TypeError(f"torch.tensor: could not infer dtype of {type(data).__name__}")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of `data`'s shape (nested lists of numbers): made on the host and copied to the
    device (a host-to-device copy). Values are not kept."""
    shape, kind = _shape_and_kind(data)
    if dtype is None:
        dtype = (bool, int64, get_default_dtype())[kind]
    _syntorch_package.current_session()
    name = _device_name("cpu" if pin_memory and device is None else device)
    out = _syntorch._empty(shape, dtype, "cpu", _pinned("tensor", name, pin_memory))
    if name != "cpu":
        out = out._to_device(name)
    return _grad(out, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    _syntorch_package.current_session()
    return _grad(_syntorch._full(_sizes((size,)), _builtins.float(fill_value), dtype, _device_name(device)),
                 requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    _syntorch_package.current_session()
    if end is None:
        start, end = 0, start
    start, end, step = _builtins.int(start), _builtins.int(end), _builtins.int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    count = _builtins.max(0, -(-(end - start) // step))
    # The same shape and kernel whatever the start.
    return _grad(_syntorch._arange(0, count, dtype, _device_name(device)), requires_grad)


def _like(make):
    def like(t, *, dtype=None, device=None, requires_grad=False):
        return _grad(make(list(t.shape), dtype if dtype is not None else t.dtype, _device_name(device or t.device)),
                     requires_grad)
    return like


empty_like = _like(_syntorch._empty)
zeros_like = _like(_syntorch._zeros)
ones_like = _like(_syntorch._ones)
randn_like = _like(_syntorch._randn)


def transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


def reshape(x, shape):
    return x._reshape(_ints((shape,)))


def pow(input, exponent):
    """input ** exponent with a number on one side: one kernel (two tensors are not supported)."""
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        raise NotImplementedError("torch.pow: a tensor raised to a tensor is not supported (a number on one side is)")
    if isinstance(exponent, Tensor):
        return _syntorch._rpow(_builtins.float(input), exponent)
    return _syntorch._pow(input, _builtins.float(exponent))


def outer(input, vec2):
    """The outer product of two vectors, as ATen computes it: input[:, None] * vec2 (one kernel)."""
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: expected 1D tensors, got {input.dim()}D and {vec2.dim()}D")
    return input.reshape(-1, 1) * vec2


ger = outer


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times, as ATen does for a number:
    an expand over a new dim after dim, copied contiguous (one copy kernel) and flattened."""
    if isinstance(repeats, Tensor) or not isinstance(repeats, _builtins.int) or repeats < 0:
        raise NotImplementedError("torch.repeat_interleave: only a non-negative number of repeats is supported "
                                  "(per-element repeats come from values, which are not simulated)")
    if dim is None:
        input, dim = input.reshape(-1), 0
    n = _builtins.max(input.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim % n
    shape = list(input.shape)
    expanded = input.unsqueeze(d + 1)._expand(shape[:d + 1] + [repeats] + shape[d + 1:])
    return expanded.reshape(shape[:d] + [shape[d] * repeats] + shape[d + 1:])


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(list(input.shape), fill_value, dtype=dtype or input.dtype,
                device=device if device is not None else input.device, requires_grad=requires_grad)


def manual_seed(seed):
    """Seeds the generators. Tensor values are not simulated, so a seed changes no cost; it is
    accepted, as scripts set one before anything else."""
    return _builtins.int(seed)


def seed():
    return 0


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


class set_grad_enabled(_CppScope):
    """Grad mode for a block (or a decorated function): ops record their backward only with it
    on, as torch.set_grad_enabled; no_grad() and enable_grad() are its two settings."""

    def __init__(self, mode=True):
        self.mode = _builtins.bool(mode)

    def _make(self):
        return _syntorch._GradMode(self.mode)



class no_grad(set_grad_enabled):
    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    def __init__(self):
        super().__init__(True)


class inference_mode(set_grad_enabled):
    def __init__(self, mode=True):
        super().__init__(not mode)


def _reduced_dims(input, dim, keepdim):
    """The dims a reduction runs over, as the extension takes them: None for all of them without
    keepdim (a 0-dim result); every dim with keepdim, or when the list is empty, as PyTorch does."""
    if isinstance(dim, _builtins.int):
        return [dim]
    if dim is None or len(dim) == 0:
        return list(range(input.dim())) if keepdim or dim is not None else None
    return list(dim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return _syntorch.mean(input if dtype is None else input.to(dtype), _reduced_dims(input, dim, keepdim), keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    return _syntorch.sum(input if dtype is None else input.to(dtype), _reduced_dims(input, dim, keepdim), keepdim)


# Tensor methods in PyTorch's spellings, over the extension's fixed-signature ones (sizes as
# *args or one sequence; -1 infers a size, as view and reshape do).

def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """Tensor.to(dtype), to(device), to(device, dtype), to(other), with non_blocking (a pinned
    source's copy then overlaps the host's work) and copy (a new tensor even when nothing changes)."""
    out = self
    for i, a in enumerate(args):
        if isinstance(a, _syntorch.dtype):
            dtype = a
        elif isinstance(a, (str, _device_class)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _builtins.bool) and i > 0:
            non_blocking = a
        elif type(a) is _builtins.int and i == 0:  # a CUDA device index, as PyTorch takes it
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {type(a).__name__}")
    if device is not None:
        out = out._to_device(_device_name(device), non_blocking)
    if dtype is not None:
        out = out._to_dtype(dtype)
    if memory_format is not None:
        out = out._in_format(memory_format)
    if copy and out._storage_id == self._storage_id:
        out = out.clone()
    return out


_device_class = device
Tensor.device = property(lambda self: device(self._device))
# view, reshape, permute and expand take PyTorch's *size or (size,) in the extension itself.
Tensor.to = _to
Tensor.half = lambda self: self._to_dtype(float16)
Tensor.float = lambda self: self._to_dtype(float32)
Tensor.bfloat16 = lambda self: self._to_dtype(bfloat16)
Tensor.matmul = lambda self, other: matmul(self, other)
Tensor.softmax = lambda self, dim, dtype=None: softmax(self, dim, dtype)
Tensor.log_softmax = lambda self, dim, dtype=None: log_softmax(self, dim, dtype)
Tensor.mean = lambda self, dim=None, keepdim=False, *, dtype=None: mean(self, dim, keepdim, dtype=dtype)
Tensor.sum = lambda self, dim=None, keepdim=False, *, dtype=None: sum(self, dim, keepdim, dtype=dtype)
Tensor.exp = lambda self: exp(self)
Tensor.log = lambda self: log(self)
for _name, _op in (("sqrt", sqrt), ("rsqrt", rsqrt), ("sin", sin), ("cos", cos), ("abs", abs)):
    setattr(Tensor, _name, (lambda op: lambda self: op(self))(_op))
Tensor.__abs__ = Tensor.abs
Tensor.pow = lambda self, exponent: pow(self, exponent)
Tensor.__pow__ = Tensor.pow
Tensor.__rpow__ = lambda self, base: pow(base, self)
Tensor.outer = lambda self, vec2: outer(self, vec2)
Tensor.repeat_interleave = lambda self, repeats, dim=None, *, output_size=None: repeat_interleave(self, repeats, dim)
Tensor.argmax = lambda self, dim=None, keepdim=False: argmax(self, dim, keepdim)
Tensor.type_as = lambda self, other: self.to(other.dtype)
Tensor.view_as = lambda self, other: self._view(list(other.shape))
Tensor.reshape_as = lambda self, other: self._reshape(list(other.shape))
Tensor.expand_as = lambda self, other: self._expand(list(other.shape))
Tensor.is_complex = lambda self: self.dtype.is_complex
def _new(make):
    """Tensor.new_empty/new_zeros/new_ones: self's dtype and device unless told otherwise."""
    def new(self, *size, dtype=None, device=None, requires_grad=False):
        return make(*size, dtype=dtype or self.dtype, device=device if device is not None else self.device,
                    requires_grad=requires_grad)
    return new


Tensor.new_empty, Tensor.new_zeros, Tensor.new_ones = _new(empty), _new(zeros), _new(ones)
Tensor.new_full = lambda self, size, fill_value, *, dtype=None, device=None, requires_grad=False: full(
    size, fill_value, dtype=dtype or self.dtype, device=device if device is not None else self.device,
    requires_grad=requires_grad)
Tensor.clamp = lambda self, min=None, max=None: clamp(self, min, max)
for _name, _op in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    _method = (lambda op: lambda self, other: op(self, other if isinstance(other, Tensor) else _builtins.float(other)))(_op)
    setattr(Tensor, _name, _method)
    setattr(Tensor, f"__{_name}__", _method)
Tensor.__hash__ = object.__hash__  # a tensor is hashed by identity, as PyTorch's (== is elementwise)
Tensor.masked_fill = lambda self, mask, value: masked_fill(self, mask, _builtins.float(value))
Tensor.masked_fill_ = lambda self, mask, value: _syntorch.masked_fill_(self, mask, _builtins.float(value))
Tensor.index_copy_ = lambda self, dim, index, source: _syntorch.index_copy_(self, dim, index, source)
Tensor.tril = lambda self, diagonal=0: tril(self, diagonal)
Tensor.triu = lambda self, diagonal=0: triu(self, diagonal)
Tensor.topk = lambda self, k, dim=-1, largest=True, sorted=True: topk(self, k, dim, largest, sorted)
Tensor.multinomial = lambda self, num_samples, replacement=False: multinomial(self, num_samples, replacement)


class _TopK(tuple):
    """torch.return_types.topk: (values, indices), also by name."""

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def topk(input, k, dim=-1, largest=True, sorted=True):
    return _TopK(_syntorch.topk(input, k, dim, largest, sorted))
Tensor.__len__ = lambda self: self.shape[0]



# Indexing: integers select, slices narrow (or stride), None adds a dim, ... stands for the rest;
# all are views, as in PyTorch. Index assignment copies into the view (a copy kernel), as a KV
# cache update `cache[:, :, pos] = kv` does.
def _basic_index(self, key):
    """Integers and slices only (a KV cache's `cache[:, :, a:b]`): views, dim by dim. A slice that
    covers its whole dim is no op at all, as in PyTorch."""
    out, dim = self, 0
    for k in key:
        if type(k) is slice:
            size = out.size(dim)
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if not (start == 0 and stop >= size and step == 1):
                out = out._slice(dim, start, _builtins.max(start, stop), step)
            dim += 1
        else:
            size = out.size(dim)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            out = out.select(dim, k)
    return out


def _index(self, key):
    if type(key) is not tuple:
        key = (key,)
    if len(key) == 1 and isinstance(key[0], Tensor) and key[0].dtype == bool:
        return _masked_select_rows(self, key[0])
    if len(key) <= self.dim() and _builtins.all(type(k) is slice or type(k) is _builtins.int for k in key):
        return _basic_index(self, key)
    consumed = _builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if _builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (self.dim() - consumed))
        else:
            expanded.append(k)
    if _builtins.sum(1 for k in expanded if k is not None) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    out, dim = self, 0
    advanced = {}  # the dim of `out` each list or tensor index applies to, once the basic ones are done
    for k in expanded:
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, _builtins.bool):
            raise IndexError("indexing with a bool is not supported; use a slice")
        elif isinstance(k, _builtins.int):
            size = out.size(dim)
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            out = out.select(dim, k)
        elif isinstance(k, slice):
            size = out.size(dim)
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if not (start == 0 and stop >= size and step == 1):  # a whole dim: no op, as in PyTorch
                out = out._slice(dim, start, _builtins.max(start, stop), step)
            dim += 1
        elif isinstance(k, (list, Tensor)):
            advanced[dim] = _index_tensor(k, out.size(dim), out.device)
            dim += 1
        else:
            raise IndexError(f"indexing with {type(k).__name__} is not supported yet (integers, slices, None and "
                             "... are)")
    if len(advanced) == 1:  # one index: index_select along its dim, its shape in the dim's place
        (dim, index), = advanced.items()
        shape = list(out.shape)
        out = index_select(out, dim, index.reshape(-1) if index.dim() != 1 else index)
        if index.dim() != 1:
            out = out._view(shape[:dim] + list(index.shape) + shape[dim + 1:])
    elif advanced:  # several, broadcast together: one gather (aten::index)
        out = _syntorch._index(out, [advanced.get(d) for d in range(_builtins.max(advanced) + 1)])
    return out


def _count_nonzero_on_host(input, what):
    """How many elements of `input` are nonzero, which the host must know to size a result: the
    count kernel and the copy to the host (a sync), then the count from the functional mode's
    values. Without them the shape cannot be known: NotImplementedError."""
    from syntorch import _functional
    value = _functional.read(input)
    if value is None:
        raise NotImplementedError(f"{what}: its result's shape depends on the values, which are not simulated "
                                  "(syntorch.set_value_mode('functional') computes them; masked_fill and where are "
                                  "the shape-stable forms)")
    (input != 0).sum()._item()  # PyTorch's count kernel and the device-to-host copy of the count
    return _builtins.int(value.count_nonzero())


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the nonzero elements, [count, dim] (or one vector per dim with as_tuple), as
    PyTorch's: a count, a sync to learn it, and a kernel writing the indices."""
    if out is not None:
        raise NotImplementedError("torch.nonzero: argument 'out' is not supported")
    count = _count_nonzero_on_host(input, "torch.nonzero")
    idx = zeros(count, _builtins.max(input.dim(), 1) if input.dim() else 0, dtype=int64, device=input.device)
    if as_tuple:
        return tuple(idx.select(1, d) for d in range(idx.size(1))) if input.dim() else (idx.reshape(-1),)
    return idx


Tensor.nonzero = lambda self, *, as_tuple=False: nonzero(self, as_tuple=as_tuple)


def _masked_select_rows(self, mask):
    """x[mask] for a boolean mask over x's leading dims: [count] + the remaining dims, as PyTorch's
    (the count's sync, then a gather of the selected rows)."""
    if mask.dim() > self.dim() or list(mask.shape) != list(self.shape)[:mask.dim()]:
        raise IndexError(f"The shape of the mask {list(mask.shape)} does not match the shape of the indexed tensor "
                         f"{list(self.shape)}")
    count = _count_nonzero_on_host(mask, "indexing with a boolean mask")
    rest = list(self.shape)[mask.dim():]
    rows = self.reshape([-1] + rest)
    index = zeros(count, dtype=int64, device=self.device)
    return index_select(rows, 0, index)


def _index_tensor(k, size, device_name):
    """A list of ints or an integer tensor as a Long index tensor on the device."""
    if isinstance(k, Tensor):
        if k.dtype == bool:
            raise NotImplementedError("indexing with a boolean mask is not supported: its result's shape depends on "
                                      "the mask's values, which are not simulated (use masked_fill or where)")
        if k.dtype not in (int64, int32):
            raise IndexError(f"tensors used as indices must be long, int or bool tensors, got {k.dtype}")
        # An index on another device is copied to the indexed tensor's first, as ATen does.
        return k if k._device == str(device_name) else k._to_device(str(device_name))
    for v in k:
        if isinstance(v, _builtins.bool) or not isinstance(v, _builtins.int):
            raise NotImplementedError("indexing with a list of anything but integers is not supported")
        if not -size <= v < size:
            raise IndexError(f"index {v} is out of bounds for dimension with size {size}")
    return tensor(list(k), dtype=int64, device=device_name)


def _setindex(self, key, value):
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) == 1 and isinstance(keys[0], Tensor) and keys[0].dtype == bool:
        return _set_masked(self, keys[0], value)
    advanced = [i for i, k in enumerate(keys) if isinstance(k, (list, Tensor))]
    if len(advanced) > 1:
        # Several indices broadcast together (x[rows, cols] = v): index_put_ over the basic view.
        if _builtins.any(not isinstance(k, (list, Tensor, slice)) or (type(k) is slice and k != slice(None)) for k in keys):
            raise NotImplementedError("index assignment with several list or tensor indices takes only whole-dim "
                                      "slices (:) beside them")
        indices = [_index_tensor(k, self.size(d), self.device) if isinstance(k, (list, Tensor)) else None
                   for d, k in enumerate(keys)]
        if not isinstance(value, Tensor):
            value = full([], _builtins.float(value), dtype=self.dtype, device="cpu")  # a wrapped number
        _syntorch._index_put_(self, indices, value)
        return
    if advanced:
        # One advanced index after basic ones: index_copy_ into that dim of the basic view.
        if _builtins.any(k is Ellipsis or k is None for k in keys[:advanced[0]]):
            raise NotImplementedError("index assignment with a list or tensor index after ... or None is not "
                                      "supported")
        dim = advanced[0]
        view = _index(self, keys[:dim]) if dim else self
        index = _index_tensor(keys[dim], view.size(dim), view.device)
        if index.dim() != 1:
            raise NotImplementedError("index assignment with a multi-dimensional index is not supported")
        if not isinstance(value, Tensor):
            shape = list(view.shape)
            shape[dim] = index.numel()
            value = full(shape, _builtins.float(value), dtype=view.dtype, device=view.device)
        _syntorch.index_copy_(view, dim, index, value)
        return
    view = _index(self, key)
    if isinstance(value, Tensor):
        if tuple(value.shape) != tuple(view.shape):
            value = value._expand(list(view.shape))
        view.copy_(value)
    else:
        view.fill_(_builtins.float(value))


def _set_masked(self, mask, value):
    """x[mask] = value for a boolean mask over x's leading dims: masked_fill_, as PyTorch does for
    a number or a one-element tensor. Anything else needs the mask's count of set elements (a
    value the simulator does not have)."""
    if mask.dim() > self.dim() or list(mask.shape) != list(self.shape)[:mask.dim()]:
        raise IndexError(f"The shape of the mask {list(mask.shape)} does not match the shape of the indexed tensor "
                         f"{list(self.shape)}")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise NotImplementedError("x[mask] = tensor is supported for a one-element tensor only: the number of "
                                      "elements the mask selects depends on its values, which are not simulated")
        value = 0.0
    aligned = mask if mask.dim() == self.dim() else mask._view(list(mask.shape) + [1] * (self.dim() - mask.dim()))
    _syntorch.masked_fill_(self, aligned, _builtins.float(value))


def _tensor_getattr(self, name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")
    raise _Unsupported(f"torch.Tensor.{name} is not supported by syntorch (docs/python.md lists what is)")


Tensor.__getattr__ = _tensor_getattr
Tensor.__getitem__ = _index
Tensor.__setitem__ = _setindex

from . import _methods, _extras, _reductions  # noqa: E402
_methods._install(_sys.modules[__name__])
_extras._install(_sys.modules[__name__])
_reductions._install(_sys.modules[__name__])
from . import linalg  # noqa: E402
from . import distributions  # noqa: E402
from . import multiprocessing  # noqa: E402
from . import hub  # noqa: E402
from . import accelerator  # noqa: E402

from syntorch import _values as _value_modes  # noqa: E402
try:
    _value_modes.value_mode()  # SYNTORCH_VALUES=functional wraps the functions above, so it is read now
except (ValueError, RuntimeError):
    pass  # a bad setting: syntorch.init() and every value read raise it


from . import _dynamo  # noqa: E402
from . import _inductor  # noqa: E402


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """torch.compile: a module or function whose calls run as compiled graphs (Inductor's fused
    kernels, graph breaks, recompiles, reduce-overhead's CUDA graphs; _dynamo.eval_frame says
    how). Usable as a decorator, with or without arguments."""
    from ._dynamo import eval_frame
    backend = eval_frame.check_arguments(fullgraph, dynamic, backend, mode, options, disable)
    kwargs = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options)
    if model is None:
        def decorate(m):
            return compile(m, disable=disable, **kwargs)
        return decorate
    if disable:
        return model
    if isinstance(model, nn.Module):
        return _dynamo._optimize_module(model, **kwargs)
    if not callable(model):
        raise RuntimeError("torch.compile: expected a callable (a function or an nn.Module), got "
                           f"{type(model).__name__}")
    return eval_frame.register(eval_frame.CompiledFunction(model, **kwargs))
