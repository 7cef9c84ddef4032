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


class RemovableHandle:
    """What register_*_hook returns: remove() takes the hook out (also on leaving a with block)."""

    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _add_hook(hooks, value, prepend=False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = value
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _IncompatibleKeys(tuple):
    """load_state_dict's result: (missing_keys, unexpected_keys), also by name."""

    def __new__(cls, missing_keys, unexpected_keys):
        return super().__new__(cls, (missing_keys, unexpected_keys))

    missing_keys = property(lambda self: self[0])
    unexpected_keys = property(lambda self: self[1])

    def __repr__(self):
        if not self[0] and not self[1]:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self[0]}, unexpected_keys={self[1]})"


class Module:
    # A wrapper whose children's names are its own (checkpoint_wrapper's): in named_modules,
    # named_parameters and state dicts (saving and loading) its children stand under its name.
    _transparent_children = False

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        for hooks in ("_forward_pre_hooks", "_forward_hooks", "_state_dict_pre_hooks", "_state_dict_hooks",
                      "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            object.__setattr__(self, hooks, OrderedDict())
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
        """A buffer (state that is not a parameter); a non-persistent one stays out of state_dict()."""
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, _syntorch.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._register(self._buffers, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, _syntorch.Tensor):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._register(self._parameters, name, param)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._register(self._modules, name, module)

    register_module = add_module

    def _check_name(self, name, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{what} name can't contain \".\" or be empty, got {name!r}")

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    # --- hooks, as PyTorch's: pre-hooks may replace the arguments, hooks the output ---

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        return _add_hook(self._forward_pre_hooks, (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        return _add_hook(self._forward_hooks, (hook, with_kwargs, always_call), prepend)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) before the module's entries are added."""
        return _add_hook(self._state_dict_pre_hooks, hook)

    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) after them; it may return a new dict."""
        return _add_hook(self._state_dict_hooks, hook)

    register_state_dict_post_hook = _register_state_dict_hook

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) before the module's entries are loaded (it may edit state_dict)."""
        return _add_hook(self._load_state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return _add_hook(self._load_state_dict_pre_hooks, lambda module, *args: hook(*args))

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) after load_state_dict (it may edit the key lists)."""
        return _add_hook(self._load_state_dict_post_hooks, hook)

    def register_full_backward_hook(self, hook, prepend=False):
        raise NotImplementedError("Module.register_full_backward_hook is not supported (tensor hooks: "
                                  "register_post_accumulate_grad_hook)")

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for hook, with_kwargs in list(self._forward_pre_hooks.values()):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        try:
            output = self.forward(*args, **kwargs)
        except BaseException:
            for hook, with_kwargs, always_call in list(self._forward_hooks.values()):
                if always_call:
                    hook(self, args, kwargs, None) if with_kwargs else hook(self, args, None)
            raise
        for hook, with_kwargs, _ in list(self._forward_hooks.values()):
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        return output

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
                child = prefix if self._transparent_children else (f"{prefix}.{name}" if prefix else name)
                yield from m.named_modules(memo, child, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def children(self):
        return (m for _, m in self.named_children())

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def get_submodule(self, target):
        module = self
        for item in target.split(".") if target else ():
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    def _get_tensor(self, target, store, what):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in getattr(module, store):
            raise AttributeError(f"{type(module).__name__} has no {what} `{name}`")
        return getattr(module, store)[name]

    def get_parameter(self, target):
        return self._get_tensor(target, "_parameters", "parameter")

    def get_buffer(self, target):
        return self._get_tensor(target, "_buffers", "buffer")

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

    def _own(self, store, prefix):
        for name, t in getattr(self, store).items():
            if t is not None:
                yield (f"{prefix}.{name}" if prefix else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        if not recurse:
            return self._own("_parameters", prefix)
        return self._named("_parameters", prefix, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        if not recurse:
            return self._own("_buffers", prefix)
        return self._named("_buffers", prefix, remove_duplicate)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Every parameter and persistent buffer by its dotted name (a tied weight under each of its
        names), detached unless keep_vars, with the state-dict hooks run, as PyTorch's."""
        if args:  # the old positional form state_dict(destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        for name, t in self._parameters.items():
            if t is not None:
                destination[prefix + name] = t if keep_vars else t.detach()
        for name, t in self._buffers.items():
            if t is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = t if keep_vars else t.detach()
        for name, m in self._modules.items():
            if m is not None:
                child = prefix if self._transparent_children else prefix + name + "."
                m.state_dict(destination=destination, prefix=child, keep_vars=keep_vars)
        for hook in list(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies each entry into the parameter or buffer of its name (a copy kernel, or a
        host-to-device copy for a checkpoint on the host), as PyTorch's: a shape mismatch is an
        error; with strict, so are missing and unexpected keys. assign=True takes the given tensors
        instead of copying. Returns (missing_keys, unexpected_keys)."""
        import syntorch.torch as torch
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        state_dict = OrderedDict(state_dict)
        missing, unexpected, errors = [], [], []

        def load(module, prefix):
            for hook in list(module._load_state_dict_pre_hooks.values()):
                hook(module, state_dict, prefix, {}, strict, missing, unexpected, errors)
            own = [(n, t, "_parameters") for n, t in module._parameters.items() if t is not None]
            own += [(n, t, "_buffers") for n, t in module._buffers.items()
                    if t is not None and n not in module._non_persistent_buffers_set]
            for name, t, store in own:
                key = prefix + name
                if key not in state_dict:
                    missing.append(key)
                    continue
                value = state_dict[key]
                if not isinstance(value, _syntorch.Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                    continue
                if list(value.shape) != list(t.shape):
                    errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {t.shape}.")
                    continue
                if assign:
                    if t.requires_grad and value.is_floating_point() and not value.requires_grad:
                        value.requires_grad_(True)
                    module._register(getattr(module, store), name, value)
                else:
                    with torch.no_grad():
                        t.copy_(value)
            for name, m in module._modules.items():
                if m is not None:
                    load(m, prefix if module._transparent_children else prefix + name + ".")

        load(self, "")
        expected = set(self.state_dict(keep_vars=True).keys())
        unexpected.extend(k for k in state_dict if k not in expected)
        result = _IncompatibleKeys(missing, unexpected)
        for m in self.modules():
            for hook in list(m._load_state_dict_post_hooks.values()):
                hook(m, result)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return result

    def to_empty(self, *, device, recurse=True):
        """Every parameter and buffer replaced by an uninitialised tensor of its shape and dtype on
        `device` (memory allocated, nothing copied): how a model built on the meta device is
        materialised."""
        import syntorch.torch as torch
        done = {}  # tied tensors stay tied
        for m in (self.modules() if recurse else (self,)):
            for store in (m._parameters, m._buffers):
                for k, v in store.items():
                    if v is None:
                        continue
                    if id(v) not in done:
                        done[id(v)] = torch.empty(*v.shape, dtype=v.dtype, device=device)
                        if v.requires_grad:
                            done[id(v)].requires_grad_(True)
                    m._register(store, k, done[id(v)])
        return self

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            text = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"

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
        # position ids keep theirs); a device to all; a memory format to 4-D and 5-D tensors.
        dtype = kwargs.pop("dtype", None)
        memory_format = kwargs.pop("memory_format", None)
        rest = []
        for a in args:
            if isinstance(a, _syntorch.dtype):
                dtype = a
            else:
                rest.append(a)
        import syntorch.torch as torch
        done = {}  # a tensor held by several modules (tied weights) converted once, and still shared
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for k, v in store.items():
                    if v is None:
                        continue
                    if id(v) in done:
                        m._register(store, k, done[id(v)])
                        continue
                    # As param.data = param.data.to(...): a leaf still, requiring grad as before.
                    with torch.no_grad():
                        out = v
                        if dtype is not None and v.is_floating_point():
                            out = out.to(dtype)
                        if rest or kwargs:
                            out = out.to(*rest, **kwargs)
                        if memory_format is not None and out.dim() in (4, 5):
                            out = out.to(memory_format=memory_format)
                    if out is not v and v.requires_grad:
                        out.requires_grad_(True)
                    done[id(v)] = out
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
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return functional.silu(x, self.inplace)


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return functional.relu(x, self.inplace)


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


from .activation import (Tanh, Sigmoid, Softmax, LogSoftmax, LeakyReLU, Softplus, Hardswish, Dropout2d,  # noqa: E402
                         MultiheadAttention)
from .loss import (CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, BCEWithLogitsLoss,  # noqa: E402
                   BCELoss)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: E402
