"""The dispatch mode that hands every ATen op a real PyTorch program runs (on the meta device) to
syntorch's torch layer, through the same ATen lowering as an IR's nodes (include/syntorch/graph/:
one table in C++ for both), with what the op's schema says of it."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import _syntorch

from . import _shapes
from ._tensors import adopt, mirror_of, run_on_meta, set_mirror


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


class _OpInfo:
    """What an op's schema says, worked out once per overload: its arguments and defaults, and
    whether it is a view, an in-place update or a factory."""

    __slots__ = ("op_type", "name", "short", "args", "view_source", "written", "factory")

    def __init__(self, func):
        schema = func._schema
        self.op_type = str(func)
        self.name = schema.name if "::" in schema.name else "aten::" + schema.name
        self.short = self.name.split("::", 1)[1]
        self.args = [(a.name, a.default_value if a.has_default_value() else None) for a in schema.arguments]
        self.written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        returns = [r.alias_info for r in schema.returns]
        self.view_source = ""
        if self.short in ("_unsafe_view",) or (returns and all(r is not None and not r.is_write for r in returns)):
            self.view_source = schema.arguments[0].name
        self.factory = (self.short.endswith("_like") or self.short.startswith("new_")
                        or not any("Tensor" in str(a.type) for a in schema.arguments))


def _bind(info, args, kwargs):
    bound = {}
    for i, (name, default) in enumerate(info.args):
        if i < len(args):
            bound[name] = args[i]
        else:
            bound[name] = kwargs.get(name, default)
    return bound


def _cudnn_tf32():
    """The program's torch.backends.cudnn.allow_tf32, for its fp32 convolutions."""
    allow = bool(torch.backends.cudnn.allow_tf32)
    if _syntorch._get_cudnn_allow_tf32() != allow:
        _syntorch._set_cudnn_allow_tf32(allow)


class Tally:
    """How many times each ATen op ran, and the arithmetic and bytes of those that had no model
    of their own (a generic memory-bound cost stood in): kept by the torch layer's side."""

    def __init__(self):
        self._tally = _syntorch._AtenTally()

    def summary(self):
        return self._tally.summary()


class BridgeMode(TorchDispatchMode):
    """Runs each ATen op on the real (meta) tensors for its outputs' shapes, dtypes and strides, and
    the same op on their syntorch mirrors for its cost."""

    def __init__(self, tally=None):
        super().__init__()
        self.tally = tally if tally is not None else Tally()
        self._infos = {}

    def m(self, t):
        """t's mirror (a tensor the bridge meets first here is adopted: an input or a parameter)."""
        s = mirror_of(t)
        return s if s is not None else adopt(t, weight=isinstance(t, torch.nn.Parameter))

    def _encode(self, x):
        if isinstance(x, torch.Tensor):
            return self.m(x)
        if isinstance(x, (list, tuple)):
            return [self._encode(y) for y in x]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, torch.dtype):
            return ("dtype", _dtype_name(x))
        if isinstance(x, torch.device):
            return ("device", x.type)
        if isinstance(x, torch.layout):
            return ("layout", _dtype_name(x))
        if isinstance(x, torch.memory_format):
            return ("memory_format", _dtype_name(x))
        if hasattr(x, "__index__"):  # a symbolic size of a concrete value
            return int(x)
        if hasattr(x, "__float__"):
            return float(x)
        return None  # a generator or another object no lowering reads

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = self._infos.get(func)
        if info is None:
            info = self._infos[func] = _OpInfo(func)
        try:
            out, args, kwargs = run_on_meta(func, args, kwargs)
        except NotImplementedError:
            # An op this PyTorch has no meta kernel for: its outputs' shapes from our own rule.
            shapes = _shapes.rule_for(info.short)
            if shapes is None:
                raise NotImplementedError(
                    f"syntorch.pytorch: {info.name} has no meta-device kernel in PyTorch {torch.__version__} and the "
                    "bridge has no shape rule for it") from None
            out = shapes(_bind(info, args, kwargs))
        self._lower(info, args, kwargs, out)
        return out

    def _lower(self, info, args, kwargs, out):
        if info.short in ("convolution", "convolution_backward"):
            _cudnn_tf32()
        bound = {name: self._encode(v) for name, v in _bind(info, args, kwargs).items()}
        slots = _slots(out)
        outputs = [None if o is None else (list(o.shape), list(o.stride()), o.storage_offset(), _dtype_name(o.dtype))
                   for o in slots]
        made = _syntorch._aten_run(self.tally._tally, info.op_type, bound, outputs, info.view_source, info.written,
                                   info.factory)
        for o, s in zip(slots, made):
            if o is not None and s is not None:
                set_mirror(o, s)


def _slots(out):
    """An op's return as the lowerings see it: one entry a returned value (a list's elements in
    turn), tensors or None."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            if isinstance(o, (list, tuple)):
                flat.extend(x if isinstance(x, torch.Tensor) else None for x in o)
            else:
                flat.append(o if isinstance(o, torch.Tensor) else None)
        return flat
    return []
