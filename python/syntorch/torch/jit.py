"""torch.jit: script and trace return what they are given, which then runs as eager PyTorch does
(TorchScript's own fusions are not modelled; torch.compile is the compiler syntorch models)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.jit")


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    return func


def ignore(drop=False, **kwargs):
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def is_scripting():
    return False


def is_tracing():
    return False
