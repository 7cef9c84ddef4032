"""More Tensor methods and properties in PyTorch's spellings, over syntorch.torch's functions:
activations, dtype conversions, transposes (T, mT), complex parts (real, imag), data, unbind,
movedim, repeat, in-place random fills, pinned memory, and the value reads (item, tolist, numpy,
bool, float, int, format), which return placeholders (syntorch._values says how)."""

import builtins

import _syntorch
from _syntorch import Tensor

from syntorch import _functional, _values


def _break(what):
    """A value read inside a compiled region is a graph break (torch._dynamo.eval_frame)."""
    if _syntorch._compile_active():
        from syntorch.torch._dynamo.eval_frame import graph_break_at
        graph_break_at(what)


def _install(torch):
    T = Tensor
    T.relu = lambda self: torch.relu(self)
    T.sigmoid = lambda self: torch.sigmoid(self)
    T.tanh = lambda self: torch.tanh(self)
    T.neg = lambda self: -self
    T.negative = T.neg
    T.add = lambda self, other, *, alpha=1: self + (other * alpha if alpha != 1 else other)
    T.sub = lambda self, other, *, alpha=1: self - (other * alpha if alpha != 1 else other)
    T.mul = lambda self, other: self * other
    T.div = lambda self, other, *, rounding_mode=None: self / other
    T.multiply, T.divide, T.subtract = T.mul, T.div, T.sub

    for name, dtype in (("double", torch.float64), ("long", torch.int64), ("int", torch.int32),
                        ("bool", torch.bool), ("byte", torch.uint8), ("char", torch.int8)):
        setattr(T, name, (lambda d: lambda self, memory_format=None: self._to_dtype(d))(dtype))
    T.nelement = lambda self: self.numel()

    def data_ptr(self):
        """A number unique to this tensor's storage plus its byte offset there (tensors sharing
        memory compare as in PyTorch); not the simulated device address."""
        return (self._storage_id << 24) + self.storage_offset() * self.element_size()

    T.data_ptr = data_ptr
    T.ndimension = lambda self: self.dim()

    def t_all(self):
        """PyTorch's .T: all dims reversed (a view)."""
        return self if self.dim() < 2 else self.permute(*reversed(range(self.dim())))

    T.T = property(t_all)
    T.mT = property(lambda self: self.transpose(-2, -1))

    def real(self):
        if self.dtype.is_complex:
            return torch.view_as_real(self).select(-1, 0)
        return self

    def imag(self):
        if not self.dtype.is_complex:
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return torch.view_as_real(self).select(-1, 1)

    T.real = property(real)
    T.imag = property(imag)

    def data_set(self, value):
        raise NotImplementedError("Tensor.data = ...: replacing a tensor's storage is not supported; copy into it "
                                  "with tensor.data.copy_(value) or assign a new nn.Parameter")

    T.data = property(lambda self: self.detach(), data_set)
    T.is_meta = property(lambda self: self._device == "meta")
    T.is_cpu = property(lambda self: self._device == "cpu")

    def unbind(self, dim=0):
        return tuple(self.select(dim, i) for i in range(self.shape[dim]))

    T.unbind = unbind
    torch.unbind = lambda input, dim=0: unbind(input, dim)

    def movedim(self, source, destination):
        n = self.dim()
        src = [source] if isinstance(source, builtins.int) else list(source)
        dst = [destination] if isinstance(destination, builtins.int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                               f"same number of dims as destination ({dst} dims)")
        src = [s % n for s in src]
        dst = [d % n for d in dst]
        order = [None] * n
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(i for i in range(n) if i not in src)
        return self.permute(*[o if o is not None else next(rest) for o in order])

    T.movedim = movedim
    T.moveaxis = movedim
    torch.movedim = movedim
    torch.moveaxis = movedim

    def repeat(self, *sizes):
        """Copies of self tiled `sizes` times along each dim (leading new dims allowed): one copy kernel."""
        sizes = torch._ints(sizes)
        if len(sizes) < self.dim():
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                               "tensor")
        shape = [1] * (len(sizes) - self.dim()) + list(self.shape)
        x = self.reshape(shape)
        interleaved, expanded, out = [], [], []
        for s, r in zip(shape, sizes):
            interleaved += [1, s]
            expanded += [r, s]
            out.append(s * r)
        return x.reshape(interleaved).expand(*expanded).contiguous().view(*out)

    T.repeat = repeat

    def random_fill(name):
        def fill(self, *args, generator=None, **kwargs):
            """Values are not simulated: one fill kernel over the tensor, as the random kernel."""
            return self.fill_(0.0)
        fill.__name__ = name
        return fill

    for name in ("uniform_", "normal_", "bernoulli_", "exponential_", "random_"):
        setattr(T, name, random_fill(name))

    def to_device(self, device=None, non_blocking=False, **kwargs):
        return self._to_device(torch._device_name(device if device is not None else "cuda"), non_blocking)

    T.cuda = to_device
    T.cpu = lambda self: self._to_device("cpu")

    # --- value reads ---
    def item(self):
        _break("Tensor.item()")
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self._device == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        real = _functional.read(self)
        if real is not None:
            self._item()  # the copy to the host and the wait, as without values
            return real.item()
        _values.note_read("item")
        return self._item()

    def host_values(self, kind):
        _break(f"Tensor.{kind}()")
        _values.note_read(kind)
        if self._device == "meta":
            raise NotImplementedError(f"Tensor.{kind}() cannot be called on meta tensors")
        if self._device != "cpu":
            self.detach()._to_device("cpu")  # the copy to the host, and the wait for it
        return _values.placeholder(self.dtype)

    def tolist(self):
        _break("Tensor.tolist()")
        real = _functional.read(self)
        if real is not None:
            if self._device != "cpu":
                self.detach()._to_device("cpu")  # the copy to the host, and the wait for it
            return real.tolist()
        value = host_values(self, "tolist")
        return _values.nested_zeros(list(self.shape), value)

    def numpy(self, *, force=False):
        _break("Tensor.numpy()")
        import numpy as np
        if self._device != "cpu" and not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        real = _functional.read(self)
        if real is not None:
            if self._device != "cpu":
                self.detach()._to_device("cpu")  # the copy to the host, and the wait for it
            return real.cpu().numpy()  # a CPU tensor's shares its memory, as PyTorch's
        host_values(self, "numpy")
        kinds = {"torch.float64": np.float64, "torch.float32": np.float32, "torch.float16": np.float16,
                 "torch.int64": np.int64, "torch.int32": np.int32, "torch.int8": np.int8, "torch.uint8": np.uint8, "torch.bool": np.bool_,
                 "torch.complex64": np.complex64, "torch.complex128": np.complex128}
        kind = kinds.get(str(self.dtype))
        if kind is None:
            raise TypeError(f"Got unsupported ScalarType {str(self.dtype).removeprefix('torch.')}")
        return np.zeros(list(self.shape), dtype=kind)

    def scalar(kind, convert):
        def read(self):
            _break(f"{kind}(tensor): data-dependent control flow or a value read")
            if self.numel() != 1:
                if kind == "bool":
                    raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
                raise ValueError("only one element tensors can be converted to Python scalars")
            real = _functional.read(self)
            if real is not None:
                self._item()
                return convert(real.item())
            _values.note_read(kind)
            return convert(self._item())
        return read

    def format(self, spec):
        if self.dim() == 0 or (spec and self.numel() == 1):
            _break("formatting a tensor's value")
            real = _functional.read(self)
            if real is not None:
                self._item()
                return builtins.format(real.item(), spec)
            _values.note_read("format")
            return builtins.format(self._item(), spec)
        return builtins.format(str(self), spec)

    T.item = item
    T.tolist = tolist
    T.numpy = numpy
    T.__bool__ = scalar("bool", builtins.bool)
    T.__float__ = scalar("float", builtins.float)
    T.__int__ = scalar("int", builtins.int)

    def index(self):
        """operator.index(t): a one-element integer tensor as a Python int (a slice bound, a list
        index), PyTorch's error otherwise."""
        if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return scalar("int", builtins.int)(self)
    T.__index__ = index

    repr_of = T.__repr__

    def tensor_repr(self):
        """PyTorch's text for a tensor with a value (the functional mode), else its shape."""
        text = _functional.tensor_repr(self, None)
        return text if text is not None else repr_of(self)
    T.__repr__ = tensor_repr
    T.__str__ = tensor_repr
    T.__format__ = format
