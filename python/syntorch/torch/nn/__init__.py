"""torch.nn: Module subclassable in Python as in PyTorch, and the common layers."""

from collections import OrderedDict

import _syntorch

from . import functional
from . import init
from . import utils  # noqa: E402
from . import attention  # noqa: E402
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.nn")


class Parameter(_syntorch.Tensor):
    """A tensor that a Module registers as a parameter (meta: its shape, dtype and device); it
    requires grad unless told otherwise."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            import syntorch.torch as torch
            data = torch.empty(0)
        if data.is_floating_point() and data.is_leaf:
            data.requires_grad_(requires_grad)
        return data


def _parameter(*size, device=None, dtype=None):
    """A layer's parameter: allocated under weights in memory reports, requiring grad."""
    import syntorch.torch as torch
    import syntorch
    syntorch.current_session()
    return _syntorch._parameter(torch._sizes(size), dtype, torch._device_name(device), True)


def _affine(module, shape, affine, bias, device, dtype):
    """A norm layer's weight and bias of `shape` (bias only with `bias`), or None for each."""
    if affine:
        module.weight = _parameter(*shape, device=device, dtype=dtype)
    else:
        object.__setattr__(module, "weight", None)
    if affine and bias:
        module.bias = _parameter(*shape, device=device, dtype=dtype)
    else:
        object.__setattr__(module, "bias", None)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign attributes before Module.__init__() call")
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, _syntorch.Tensor) and not isinstance(value, type(None)):
            # Tensors assigned as attributes are parameters, as nn.Parameter(...) makes them.
            self._parameters[name] = value
        # Also an ordinary attribute: reading it (model.layer, self.weight: every op's operands)
        # then costs a dict lookup, not __getattr__. The stores stay the registry; _register keeps
        # the two in step.
        object.__setattr__(self, name, value)

    def _register(self, store, name, value):
        store[name] = value
        if name.isidentifier():
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        if name in self.__dict__:
            object.__delattr__(self, name)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def register_buffer(self, name, tensor, persistent=True):
        self._register(self._buffers, name, tensor)

    def register_parameter(self, name, param):
        self._register(self._parameters, name, param)

    def add_module(self, name, module):
        self._register(self._modules, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Each module once (a shared one under its first name), as PyTorch's."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def children(self):
        return iter(self._modules.values())

    def _named(self, store, prefix, remove_duplicate=True):
        """The tensors of `store` over the module tree; a tensor held twice (tied weights) once
        unless remove_duplicate is off, as PyTorch's named_parameters and named_buffers."""
        seen = set()
        for mname, m in self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate):
            for name, t in getattr(m, store).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mname}.{name}" if mname else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        if not recurse:
            raise NotImplementedError("Module.named_parameters: recurse=False is not supported")
        return self._named("_parameters", prefix, remove_duplicate)

    def parameters(self):
        return (p for _, p in self.named_parameters())

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        if not recurse:
            raise NotImplementedError("Module.named_buffers: recurse=False is not supported")
        return self._named("_buffers", prefix, remove_duplicate)

    def buffers(self):
        return (b for _, b in self.named_buffers())

    def state_dict(self):
        # Every name, a tied weight under each of its names (as PyTorch's state_dict).
        out = OrderedDict(self.named_parameters(remove_duplicate=False))
        out.update(self.named_buffers(remove_duplicate=False))
        return out

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, **kwargs):
        # As PyTorch: a dtype applies to floating-point tensors only (integer buffers such as
        # position ids keep theirs); a device to all.
        dtype = kwargs.pop("dtype", None)
        rest = []
        for a in args:
            if isinstance(a, _syntorch.dtype):
                dtype = a
            else:
                rest.append(a)
        import syntorch.torch as torch
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for k, v in store.items():
                    if v is None:
                        continue
                    # As param.data = param.data.to(...): a leaf still, requiring grad as before.
                    with torch.no_grad():
                        out = v
                        if dtype is not None and v.is_floating_point():
                            out = out.to(dtype)
                        if rest or kwargs:
                            out = out.to(*rest, **kwargs)
                    if out is not v and v.requires_grad:
                        out.requires_grad_(True)
                    m._register(store, k, out)
        return self

    def half(self):
        return self.to(_syntorch.float16)

    def bfloat16(self):
        return self.to(_syntorch.bfloat16)

    def float(self):
        return self.to(_syntorch.float32)

    def cuda(self):
        return self.to("cuda")

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        if not set_to_none:
            raise NotImplementedError("Module.zero_grad: set_to_none=False is not supported (the optimizer's "
                                      "zero_grad(set_to_none=False) is)")
        for p in self.parameters():
            p.grad = None


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _parameter(out_features, in_features, device=device, dtype=dtype)
        if bias:
            self.bias = _parameter(out_features, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x):
        return functional.linear(x, self.weight, self.bias)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = _parameter(num_embeddings, embedding_dim, device=device, dtype=dtype)

    def forward(self, indices):
        return functional.embedding(indices, self.weight)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        _affine(self, normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, x):
        return functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        if elementwise_affine:
            self.weight = _parameter(*normalized_shape, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "weight", None)

    def forward(self, x):
        return functional.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return functional.gelu(x, approximate=self.approximate)


class SiLU(Module):
    def forward(self, x):
        return functional.silu(x)


class ReLU(Module):
    def forward(self, x):
        return functional.relu(x)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, x):
        return functional.dropout(x, self.p, self.training)


class Identity(Module):
    def forward(self, x):
        return x


class _ConvNd(Module):
    """Conv1d, Conv2d, Conv3d and ConvTranspose2d: weight [out, in / groups, *kernel] (transposed:
    [in, out / groups, *kernel]) and bias [out]."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        n = self._dims
        if padding_mode != "zeros":
            raise NotImplementedError(f"{type(self).__name__}: padding_mode={padding_mode!r} is not supported")
        if isinstance(padding, str):
            raise NotImplementedError(f"{type(self).__name__}: padding={padding!r} is not supported; give sizes")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                             f"must be divisible by groups ({groups})")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = tuple(functional._tuple(kernel_size, n))
        self.stride, self.padding = functional._tuple(stride, n), functional._tuple(padding, n)
        self.dilation, self.output_padding = functional._tuple(dilation, n), functional._tuple(output_padding, n)
        shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = _parameter(*shape, *self.kernel_size, device=device, dtype=dtype)
        if bias:
            self.bias = _parameter(out_channels, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x):
        return functional._convolution(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                                       self._transposed,
                                       self.output_padding if self._transposed else [0] * self._dims, self.groups)


class Conv1d(_ConvNd):
    _dims = 1


class Conv2d(_ConvNd):
    _dims = 2


class Conv3d(_ConvNd):
    _dims = 3


class ConvTranspose2d(_ConvNd):
    _dims = 2
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                         device, dtype, output_padding)


class _BatchNorm(Module):
    """BatchNorm1d/2d/3d: per-channel weight and bias, running statistics as buffers; the batch's
    statistics in training, the running ones in eval."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        _affine(self, (num_features,), affine, True, device, dtype)
        if track_running_stats:
            import syntorch.torch as torch
            # Their values never matter here; made without a fill kernel, as PyTorch makes them on the host.
            self.register_buffer("running_mean", torch.empty(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", torch.empty(num_features, device=device, dtype=dtype))
        else:
            object.__setattr__(self, "running_mean", None)
            object.__setattr__(self, "running_var", None)

    def forward(self, x):
        training = self.training or self.running_mean is None
        return functional.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training,
                                     self.momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    pass


class BatchNorm2d(_BatchNorm):
    pass


class BatchNorm3d(_BatchNorm):
    pass


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        _affine(self, (num_channels,), affine, True, device, dtype)

    def forward(self, x):
        return functional.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode, self.return_indices = dilation, ceil_mode, return_indices

    def forward(self, x):
        return functional.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                                     self.return_indices)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.ceil_mode = kernel_size, stride, padding, ceil_mode

    def forward(self, x):
        return functional.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode)


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return functional.adaptive_avg_pool2d(x, self.output_size)


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode

    def forward(self, x):
        return functional.interpolate(x, self.size, self.scale_factor, self.mode)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, m):
        self._modules[str(len(self._modules))] = m
        return self

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]


class Sequential(ModuleList):
    """Modules run in order, each on the previous one's output (a ModuleList with a forward)."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        for k, v in (modules or {}).items():
            self._modules[k] = v

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, v):
        self._modules[k] = v

    def __iter__(self):
        return iter(self._modules)

    def __len__(self):
        return len(self._modules)

    def items(self):
        return self._modules.items()

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()


from . import parallel  # noqa: E402,F401  (after Module: it subclasses it)
