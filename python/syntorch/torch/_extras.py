"""torch functions and constants that model code reaches for, over syntorch.torch's ops: flatten,
is_tensor, from_numpy and as_tensor, eye, linspace, randperm, normal, equal, Size, finfo and
iinfo, Generator, and the math constants and version."""

import builtins
import math

import _syntorch
from _syntorch import Tensor

from syntorch import _values

__version__ = "2.5.0+syntorch"  # the PyTorch API level syntorch follows


class Size(tuple):
    """torch.Size: a tuple of ints (tensor shapes compare equal to it). A slice of it is a plain
    tuple (PyTorch's is a Size): indexing stays tuple's own, as fast as a shape is read."""

    def __new__(cls, sizes=()):
        return super().__new__(cls, (builtins.int(s) for s in sizes))

    def numel(self):
        return math.prod(self)

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __repr__(self):
        return f"torch.Size({list(self)})"


class finfo:
    """Floating-point limits of a dtype (IEEE formats' values, as torch.finfo)."""

    _TABLE = {"torch.float64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308, 15),
              "torch.float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38, 6),
              "torch.float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 3),
              "torch.bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 2),
              "torch.float8_e4m3fn": (8, 0.125, 448.0, 0.015625, 1)}

    def __init__(self, type=None):
        import syntorch.torch as torch
        type = type if type is not None else torch.get_default_dtype()
        entry = self._TABLE.get(str(type))
        if entry is None:
            raise TypeError(f"torch.finfo() requires a floating point input type, got {type}")
        self.dtype = str(type).removeprefix("torch.")
        self.bits, self.eps, self.max, self.tiny, self.resolution_digits = entry
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -self.resolution_digits


class iinfo:
    """Integer limits of a dtype, as torch.iinfo."""

    _BITS = {"torch.int8": 8, "torch.int32": 32, "torch.int64": 64}

    def __init__(self, type):
        bits = self._BITS.get(str(type))
        if bits is None:
            raise TypeError(f"torch.iinfo() requires an integer input type, got {type}")
        self.bits, self.dtype = bits, str(type).removeprefix("torch.")
        self.max, self.min = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))


class Generator:
    """A random number generator's state: seeds are kept (values are not simulated, so a seed
    changes no cost); samplers and random_split draw their orders from it."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721

    def manual_seed(self, seed):
        self._seed = builtins.int(seed)
        self.__dict__.pop("_functional_real", None)  # the functional mode's PyTorch twin starts again
        return self

    def seed(self):
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        import syntorch.torch as torch
        return torch.empty(8, dtype=torch.int64, device="cpu")

    def set_state(self, state):
        return self


def _install(torch):
    torch.__version__ = __version__
    torch.Size, torch.finfo, torch.iinfo, torch.Generator = Size, finfo, iinfo, Generator
    _syntorch._set_size_type(Size)  # Tensor.shape and Tensor.size() give torch.Size, as PyTorch's
    torch.pi, torch.e, torch.inf, torch.nan = math.pi, math.e, math.inf, math.nan

    def flatten(input, start_dim=0, end_dim=-1):
        return input.flatten(start_dim, end_dim)

    def is_tensor(obj):
        return isinstance(obj, Tensor)

    def is_floating_point(input):
        return input.is_floating_point()

    def numel(input):
        return input.numel()

    _numpy_dtypes = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                     "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
                     "complex64": torch.complex64, "complex128": torch.complex128}

    def from_numpy(ndarray):
        """A host tensor of the array's shape and dtype (its values are not kept)."""
        dtype = _numpy_dtypes.get(str(getattr(ndarray, "dtype", "")))
        if dtype is None:
            raise TypeError(f"can't convert np.ndarray of type {getattr(ndarray, 'dtype', type(ndarray))}. The only "
                            f"supported types are: {', '.join(_numpy_dtypes)}.")
        return torch.empty(*ndarray.shape, dtype=dtype, device="cpu")

    def as_tensor(data, dtype=None, device=None):
        """data itself when it is a tensor of that dtype and device (else converted); an array or
        nested lists become a tensor as torch.tensor makes one."""
        if isinstance(data, Tensor):
            out = data if dtype is None else data.to(dtype)
            return out if device is None else out.to(device)
        if type(data).__module__ == "numpy":
            out = from_numpy(data)
            if dtype is not None:
                out = out.to(dtype)
            return out if device is None else out.to(device)
        return torch.tensor(data, dtype=dtype, device=device)

    def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
        return torch.zeros(n, n if m is None else m, dtype=dtype, device=device, requires_grad=requires_grad)

    def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
        if steps < 0:
            raise RuntimeError("number of steps must be non-negative")
        return torch.zeros(steps, dtype=dtype, device=device, requires_grad=requires_grad)

    def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got{n}")
        return torch.randint(0, builtins.max(n, 1), (n,), dtype=dtype if dtype is not None else torch.int64,
                             device=device)

    def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
        if isinstance(mean, Tensor):
            return torch.randn_like(mean)
        if isinstance(std, Tensor):
            return torch.randn_like(std)
        if size is None:
            raise TypeError("normal() with float mean and std needs a size")
        return torch.randn(*size, dtype=dtype, device=device)

    def equal(input, other):
        """Whether the two hold the same values: a read of a value the simulator does not have
        (a placeholder, as Tensor.item's), after PyTorch's shape check."""
        if list(input.shape) != list(other.shape):
            return False
        from syntorch import _functional
        a, b = _functional.read(input), _functional.read(other)
        if a is not None and b is not None:  # the functional mode's values
            return _functional.real_torch().equal(a, b)
        _values.note_read("equal")
        return True

    for fn in (flatten, is_tensor, is_floating_point, numel, from_numpy, as_tensor, eye, linspace, randperm, normal,
               equal):
        setattr(torch, fn.__name__, fn)

    def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
        """With a dtype: a cast (Tensor.type(torch.float16)); without: PyTorch's type string."""
        if dtype is None:
            names = {"torch.float32": "FloatTensor", "torch.float16": "HalfTensor", "torch.float64": "DoubleTensor",
                     "torch.bfloat16": "BFloat16Tensor", "torch.int64": "LongTensor", "torch.int32": "IntTensor",
                     "torch.int8": "CharTensor", "torch.bool": "BoolTensor"}
            prefix = "torch.cuda." if self.is_cuda else "torch."
            return prefix + names.get(str(self.dtype), "Tensor")
        if isinstance(dtype, str):
            raise NotImplementedError(f"Tensor.type({dtype!r}): give a dtype")
        return self.to(dtype)

    Tensor.type = tensor_type

    from ._einsum import einsum
    torch.einsum = einsum

    def meshgrid(*tensors, indexing="ij"):
        """Views of the 1-D inputs expanded over the grid (no kernel), as PyTorch's."""
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        if indexing not in ("ij", "xy"):
            raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
        for t in tensors:
            if t.dim() > 1:
                raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
        flat = [t.reshape(-1) for t in tensors]
        swap = indexing == "xy" and len(flat) >= 2
        if swap:
            flat[0], flat[1] = flat[1], flat[0]
        shape = [t.shape[0] for t in flat]
        out = []
        for i, t in enumerate(flat):
            view = [1] * len(flat)
            view[i] = shape[i]
            out.append(t.view(*view).expand(*shape))
        if swap:
            out[0], out[1] = out[1], out[0]
        return tuple(out)

    torch.meshgrid = meshgrid

    def as_strided(input, size, stride, storage_offset=None):
        return input._as_strided(list(size), list(stride),
                                 input.storage_offset() if storage_offset is None else storage_offset)

    torch.as_strided = as_strided
    Tensor.as_strided = as_strided

    def unfold(self, dimension, size, step):
        """Windows of `size` every `step` along dimension, as a new last dim: a view."""
        n = self.dim()
        d = dimension % builtins.max(n, 1)
        length = self.shape[d] if n else 1
        if size > length:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        sizes, strides = list(self.shape), list(self.stride())
        windows = (length - size) // step + 1
        inner = strides[d] if n else 1
        sizes[d:d + 1] = [windows] if n else []
        strides[d:d + 1] = [inner * step] if n else []
        return self._as_strided(sizes + [size], strides + [inner], self.storage_offset())

    Tensor.unfold = unfold

    def unflatten(self, dim, sizes):
        d = dim % self.dim()
        sizes = list(sizes)
        return self.view(*(list(self.shape[:d]) + sizes + list(self.shape[d + 1:])))

    Tensor.unflatten = unflatten
    torch.unflatten = unflatten

    # Memory formats: the layouts a tensor may be asked for (only the strides' order changes;
    # convolutions run channels-last tensors without transposing them, as cuDNN does).
    for name in ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d"):
        setattr(torch, name, _MemoryFormat(name))
    contiguous = Tensor.contiguous
    is_contiguous = Tensor.is_contiguous

    def in_format(self, memory_format):
        """self laid out in memory_format: itself when it is already, else one copy kernel."""
        if memory_format is None or memory_format.name == "preserve_format":
            return self
        if memory_format.name == "contiguous_format":
            return self if is_contiguous(self) else contiguous(self)
        rank = 4 if memory_format.name == "channels_last" else 5
        if self.dim() != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {memory_format.name} format")
        if Tensor.is_contiguous(self, memory_format):
            return self
        last = [0] + list(range(2, rank)) + [1]
        back = [0, rank - 1] + list(range(1, rank - 1))
        return contiguous(self.permute(*last)).permute(*back)

    def tensor_contiguous(self, memory_format=None):
        """self when already laid out so (the same object, as PyTorch's), else a copy."""
        if memory_format is not None:
            return in_format(self, memory_format)
        return self if is_contiguous(self) else contiguous(self)

    def tensor_is_contiguous(self, memory_format=None):
        if memory_format is None or memory_format.name in ("contiguous_format", "preserve_format"):
            return is_contiguous(self)
        rank = 4 if memory_format.name == "channels_last" else 5
        if self.dim() != rank:
            return False
        last = [0] + list(range(2, rank)) + [1]
        return is_contiguous(self.permute(*last))

    Tensor.contiguous = tensor_contiguous
    Tensor.is_contiguous = tensor_is_contiguous
    Tensor._in_format = in_format

    # The legacy typed constructors: torch.FloatTensor(2, 3) is an uninitialised host tensor.
    for name, dtype in (("FloatTensor", torch.float32), ("DoubleTensor", torch.float64), ("HalfTensor", torch.float16),
                        ("BFloat16Tensor", torch.bfloat16), ("LongTensor", torch.int64), ("IntTensor", torch.int32),
                        ("BoolTensor", torch.bool), ("CharTensor", torch.int8)):
        setattr(torch, name, _legacy_constructor(name, dtype))


class _MemoryFormat:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def _legacy_constructor(name, dtype):
    def make(*args, device=None):
        import syntorch.torch as torch
        if len(args) == 1 and isinstance(args[0], (list, tuple)) and not isinstance(args[0], Size):
            return torch.tensor(args[0], dtype=dtype, device=device or "cpu")
        return torch.empty(*args, dtype=dtype, device=device or "cpu")
    make.__name__ = name
    return make
