"""Activation checkpointing as a module wrapper (what FSDP training scripts apply per block): the
wrapped module's forward runs under torch.utils.checkpoint.checkpoint, so its activations are
recomputed in the backward instead of kept. The wrapper is invisible in parameter and state-dict
names, as PyTorch's."""

import enum

from syntorch.torch import nn
from syntorch.torch.utils.checkpoint import checkpoint as _checkpoint

_WRAPPED = "_checkpoint_wrapped_module"


class CheckpointImpl(enum.Enum):
    REENTRANT = enum.auto()
    NO_REENTRANT = enum.auto()


class CheckpointWrapper(nn.Module):
    _transparent_children = True  # the wrapped module's names are the wrapper's

    def __init__(self, mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None, **checkpoint_fn_kwargs):
        super().__init__()
        if not isinstance(mod, nn.Module):
            raise TypeError(f"checkpoint_wrapper: expected an nn.Module, got {type(mod).__name__}")
        if not isinstance(checkpoint_impl, CheckpointImpl):
            raise TypeError(f"checkpoint_wrapper: checkpoint_impl must be a CheckpointImpl, got {checkpoint_impl!r}")
        setattr(self, _WRAPPED, mod)
        object.__setattr__(self, "checkpoint_impl", checkpoint_impl)
        object.__setattr__(self, "_checkpoint_fn", checkpoint_fn)
        object.__setattr__(self, "_checkpoint_fn_kwargs", checkpoint_fn_kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"][_WRAPPED], name)

    def __getitem__(self, key):
        return self._modules[_WRAPPED].__getitem__(key)

    def forward(self, *args, **kwargs):
        mod = self._modules[_WRAPPED]
        if self._checkpoint_fn is not None:
            return self._checkpoint_fn(mod, *args, **self._checkpoint_fn_kwargs, **kwargs)
        reentrant = self.checkpoint_impl == CheckpointImpl.REENTRANT
        return _checkpoint(mod, *args, use_reentrant=reentrant, **self._checkpoint_fn_kwargs, **kwargs)


def checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                       **checkpoint_fn_kwargs):
    """`module` wrapped so that its forward is checkpointed."""
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def apply_activation_checkpointing(model, checkpoint_wrapper_fn=None, check_fn=None, auto_wrap_policy=None):
    """Wraps, in place, every submodule of `model` for which check_fn is true (every one without it;
    not inside one already wrapped) with checkpoint_wrapper_fn (checkpoint_wrapper without it)."""
    if checkpoint_wrapper_fn is None:
        checkpoint_wrapper_fn = checkpoint_wrapper
    if check_fn is None:
        check_fn = lambda _: True  # noqa: E731
    if auto_wrap_policy is not None:
        raise NotImplementedError("apply_activation_checkpointing: auto_wrap_policy is not supported; use check_fn")

    def visit(parent):
        for name, child in list(parent._modules.items()):
            if child is None or isinstance(child, CheckpointWrapper):
                continue
            if check_fn(child):
                parent._register(parent._modules, name, checkpoint_wrapper_fn(child))  # in its place
            else:
                visit(child)
    visit(model)
    return model
